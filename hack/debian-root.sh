#!/usr/bin/env bash
# Build (once) and print the path of a cached Debian root filesystem.
#
# Used by the lab (PVE 9 nodes stand on Debian 13 "trixie") and by the
# compatibility tests (ansible-core 2.19 comes from trixie; Perl's
# Crypt::OpenSSL::RSA of Debian 13 judges the lab's tickets). Building one
# takes a few minutes, so it lives outside the repository and is reused:
#   GOPVE_CACHE (default /var/cache/gopve)/roots/<suite>
# The root is built in a temporary directory and renamed into place, so a
# half-built root is never used; a lock serialises concurrent callers.
set -euo pipefail

suite=${1:?usage: debian-root.sh SUITE}
cache=${GOPVE_CACHE:-/var/cache/gopve}/roots
mirror=${GOPVE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What a lab node needs goes in with debootstrap; the rest is installed
# afterwards with apt in the chroot, because debootstrap's own configure loop
# trips over python3-cryptography: ansible-core (the 2.19 controller of the
# compatibility tests) and libcrypt-openssl-rsa-perl (PVE's ticket signing
# library, with perl: pveapi's TestTicketsAsPerlSignsThem). Changing either
# list changes the stamp, which rebuilds; a root whose debootstrap list and
# recipe version are the same and whose apt list only lacks packages gets a
# copy with the missing ones installed (seconds, not a new debootstrap).
packages=openssh-server,openssh-client,python3,python3-apt,apt,sudo,iproute2,procps,kmod,ca-certificates,curl
extra="ansible-core libcrypt-openssl-rsa-perl"
recipe=v2
stamp="$suite $packages $extra $recipe"

root=$cache/$suite
retired=$cache/.retired
mkdir -p "$cache"
exec 9>"$cache/.$suite.lock"
flock 9

# A replaced root may still be the lower layer of a running lab's overlay
# (or of another helper's test): deleting its files would pull them from
# under that lab. So it is renamed aside (an overlay holds the directory,
# not its name) and deleted only once no mount namespace on this machine has
# an overlay over this suite's roots any more.
# (mountinfo keeps the lower directory's name as it was at mount time.)
in_use() {
  grep -qsE "lowerdir=([^ ,]*:)?$cache/$suite(,|:| |\$)" /proc/[0-9]*/mountinfo
}
if [ -d "$retired" ] && ! in_use; then
  rm -rf --one-file-system "$retired"/"$suite".* 2>/dev/null || true
fi

have=$(cat "$root/.gopve-stamp" 2>/dev/null || true)
if [ -n "$have" ] && [ "$have" = "$stamp" ]; then
  echo "$root"
  exit 0
fi

# The apt packages a root can be completed with: same suite, debootstrap
# list and recipe, every apt package it has still wanted.
missing=""
if [ -n "$have" ] && [ -x "$root/usr/bin/apt-get" ] && [[ $have == "$suite $packages "*" $recipe" ]]; then
  old=${have#"$suite $packages "}; old=${old%" $recipe"}
  missing=" "
  for p in $old; do [[ " $extra " == *" $p "* ]] || missing=""; done
  if [ -n "$missing" ]; then
    missing=""
    for p in $extra; do [[ " $old " == *" $p "* ]] || missing+=" $p"; done
  fi
fi

work=$(mktemp -d "$cache/.$suite.build.XXXXXX")
trap 'rm -rf --one-file-system "$work" "$work.log"' EXIT
if [ -n "$missing" ]; then
  echo "debian-root.sh: adding$missing to a copy of the $suite root in $work" >&2
  cp -a "$root/." "$work/"
  install=$missing
  update=1
else
  command -v debootstrap >/dev/null || {
    echo "debian-root.sh: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
  echo "debian-root.sh: building $suite root in $work (a few minutes, once)" >&2
  debootstrap --variant=minbase --include="$packages" "$suite" "$work" "$mirror" >"$work.log" 2>&1 || {
    tail -30 "$work.log" >&2; exit 1; }
  install=$extra
  update=0
fi
# apt inside the chroot needs /proc and /dev; a private mount namespace keeps
# those mounts from leaking to the host and lets them vanish with the process.
# A copied root has no apt lists (dropped below): those are fetched first.
# shellcheck disable=SC2016 # the script's $1 is the inner shell's, not ours
unshare --mount --propagation private -- sh -c '
  set -e
  mount -t proc proc "$1/proc"
  mount --rbind /dev "$1/dev"
  cp /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
  if [ "$3" = 1 ]; then chroot "$1" apt-get update -q; fi
  chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $2
' sh "$work" "$install" "$update" >>"$work.log" 2>&1 || { tail -30 "$work.log" >&2; exit 1; }
rm -f "$work.log"
# The root is used read-only as an overlay lower layer: drop the apt lists and
# caches that only bloat it.
rm -rf "$work"/var/cache/apt/archives/*.deb "$work"/var/lib/apt/lists/*_*
echo "$stamp" >"$work/.gopve-stamp"
if [ -e "$root" ]; then
  mkdir -p "$retired"
  mv "$root" "$(mktemp -u "$retired/$suite.XXXXXX")"
fi
mv "$work" "$root"
trap - EXIT
if ! in_use; then
  rm -rf --one-file-system "$retired"/"$suite".* 2>/dev/null || true
fi
echo "$root"
