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
# What a lab node needs goes in with debootstrap; ansible-core (the 2.19
# controller of the compatibility tests) is installed afterwards with apt in
# the chroot, because debootstrap's own configure loop trips over
# python3-cryptography. Changing either list changes the stamp, which rebuilds.
packages=openssh-server,openssh-client,python3,python3-apt,apt,sudo,iproute2,procps,kmod,ca-certificates,curl
extra="ansible-core"
stamp="$suite $packages $extra v2"

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
# apt inside the chroot needs /proc and /dev; a private mount namespace keeps
# those mounts from leaking to the host and lets them vanish with the process.
unshare --mount --propagation private -- sh -c '
  set -e
  mount -t proc proc "$1/proc"
  mount --rbind /dev "$1/dev"
  cp /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
  chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $2
' sh "$work" "$extra" >>"$work.log" 2>&1 || { tail -30 "$work.log" >&2; exit 1; }
rm -f "$work.log"
# The root is used read-only as an overlay lower layer: drop the apt lists and
# caches that only bloat it.
rm -rf "$work"/var/cache/apt/archives/*.deb "$work"/var/lib/apt/lists/*_*
echo "$stamp" >"$work/.gopve-stamp"
rm -rf --one-file-system "$root"
mv "$work" "$root"
trap - EXIT
echo "$root"
