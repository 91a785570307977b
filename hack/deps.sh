#!/usr/bin/env bash
# Install the Debian packages the build, the lab and the tests need — only the
# missing ones, so a second call costs a dpkg query and nothing else.
set -euo pipefail
packages=(
  ansible-core ansible-lint yamllint   # controller (2.14 on Debian 12) and lint
  shellcheck                             # ansible-test sanity's shellcheck (make lint): skipped without it
  openssh-server openssh-client sudo acl  # real SSH to the lab nodes, become
  debootstrap                            # Debian 13 roots: PVE 9 nodes, ansible-core 2.19
  dpkg-dev apt-utils                     # the lab's apt repository
  iproute2 util-linux procps curl ca-certificates python3-voluptuous bc
  ansible python3-proxmoxer python3-requests  # third-party clients the lab must fool (community.general proxmox_*)
  libcrypt-openssl-rsa-perl              # PVE's ticket signing library: judges the lab's and local mode's tickets
  liburi-perl                            # URI::Escape, PVE::Tools' encode_text/decode_text: judges the lab's user.cfg text
  zstd tar                               # read the lab's vzdump archives as PVE's restore does
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Go version is stated once, in go.mod's `go` line; this only reads it.
want=$(sed -n 's/^go //p' "$(dirname "$0")/../go.mod")
command -v go >/dev/null || { echo "deps: Go >= $want is required (go.mod; https://go.dev/dl); not found on PATH" >&2; exit 1; }
have=$(go env GOVERSION); have=${have#go}
if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" != "$want" ]; then
  echo "deps: Go >= $want is required (go.mod); $(command -v go) is $have" >&2; exit 1
fi
