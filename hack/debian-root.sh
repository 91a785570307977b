#!/usr/bin/env bash
# Build (once) and print the path of a cached Debian root filesystem.
#
# Used by the lab (PVE 9 nodes stand on Debian 13 "trixie") and by the
# compatibility tests (ansible-core 2.19 comes from trixie). Building one takes
# a few minutes, so it lives outside the repository and is reused:
#   GOPVE_CACHE (default /var/cache/gopve)/roots/<suite>
# The root is built in a temporary directory and renamed into place, so a
# half-built root is never used; a lock serialises concurrent callers.
set -euo pipefail

suite=${1:?usage: debian-root.sh SUITE}
cache=${GOPVE_CACHE:-/var/cache/gopve}/roots
mirror=${GOPVE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Everything a lab node or a 2.19 controller needs. Changing the list changes
# the stamp, which rebuilds the root.
packages=openssh-server,openssh-client,python3,python3-apt,apt,sudo,ansible-core,iproute2,procps,kmod,ca-certificates,curl
stamp="$suite $packages v1"

root=$cache/$suite
mkdir -p "$cache"
exec 9>"$cache/.$suite.lock"
flock 9

if [ -f "$root/.gopve-stamp" ] && [ "$(cat "$root/.gopve-stamp")" = "$stamp" ]; then
  echo "$root"
  exit 0
fi

command -v debootstrap >/dev/null || {
  echo "debian-root.sh: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }

work=$(mktemp -d "$cache/.$suite.build.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
echo "debian-root.sh: building $suite root in $work (a few minutes, once)" >&2
debootstrap --variant=minbase --include="$packages" "$suite" "$work" "$mirror" >"$work.log" 2>&1 || {
  tail -30 "$work.log" >&2; exit 1; }
rm -f "$work.log"
# The root is used read-only as an overlay lower layer: drop the apt lists and
# caches that only bloat it.
rm -rf "$work"/var/cache/apt/archives/*.deb "$work"/var/lib/apt/lists/*_*
echo "$stamp" >"$work/.gopve-stamp"
rm -rf --one-file-system "$root"
mv "$work" "$root"
trap - EXIT
echo "$root"
