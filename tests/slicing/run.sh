#!/usr/bin/env bash
# Job slicing (AWX / Automation Platform, issue 19): disjoint --limit slices
# of one inventory each converge their own hosts and no other, for the
# per-node phases (base, zfs). On a fresh 3-node lab:
#   slice 1 = pve01, slice 2 = pve02,pve03, each `gopve.proxmox.site --tags
#   base,zfs --limit SLICE`:
#   - slice 1 changes pve01 only; pve02 and pve03 are read back untouched
#     (no pool, no no-subscription repository, their overlay hashes as before);
#   - slice 2 then changes pve02 and pve03 only, pve01's hash unchanged;
#   - a run over the whole group then reports changed=0: the slices together
#     converged everything.
# The cluster and storage phases are left out: a sliced join needs the
# primary's state from another slice (engineer cluster-truth's --limit work,
# not in main yet), and storage runs once for the cluster.
# Needs root (the lab); `make test` runs it after the roles test (about 20 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
PVE=${PVE:-9}
work=$(mktemp -d)
lab=$work/bin/lab
labdir=
cleanup() {
  [ -n "$labdir" ] && "$lab" down --dir "$labdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

make -s build >/dev/null
mkdir -p "$(dirname "$lab")"
CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab
coll=$work/collections/ansible_collections/gopve/proxmox
mkdir -p "$coll"
cp -r galaxy.yml meta plugins roles playbooks bin "$coll/"
labdir=$work/lab
"$lab" up --nodes 3 --pve "$PVE" --dir "$labdir" >/dev/null
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
  HOME=$work/home ANSIBLE_LOCAL_TEMP=$work/home/tmp
mkdir -p "$work/home"

fail() { echo "slicing: $*" >&2; exit 1; }
# state NODE: what the per-node phases write, read back on the node itself
# (not from the recap): the pool, the repository files, zfs.conf, and the
# installed packages' versions.
state() {
  "$lab" ssh --dir "$labdir" "$1" 'zpool list -H -o name 2>/dev/null; \
    cat /etc/apt/sources.list.d/*.sources /etc/modprobe.d/zfs.conf; \
    dpkg-query -W -f "\${Package} \${Version}\n" pve-manager proxmox-widget-toolkit vim 2>/dev/null; true' | sha256sum
}
site() { # site LOG [ansible-playbook args]
  local log=$work/$1
  shift
  ansible-playbook -i "$labdir/inventory.yml" -e @"$repo/hack/demo/group_vars.yml" \
    --tags base,zfs gopve.proxmox.site "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "the run $* failed"; }
}
recap() { # recap LOG HOST: HOST's changed count, empty when it did not run
  sed -n "s/^$2 *: .*changed=\([0-9]*\).*/\1/p" "$work/$1"
}

declare -A before
for n in pve01 pve02 pve03; do before[$n]=$(state "$n"); done

site slice1.log --limit pve01
[ "$(recap slice1.log pve01)" -gt 0 ] 2>/dev/null || fail "slice 1 did not change pve01"
for n in pve02 pve03; do
  [ -z "$(recap slice1.log "$n")" ] || fail "slice 1 (pve01) ran on $n"
  [ "$(state "$n")" = "${before[$n]}" ] || fail "slice 1 (pve01) changed $n"
done
"$lab" ssh --dir "$labdir" pve01 'zpool list -H -o name nvme-vm' >/dev/null || fail "slice 1 made no pool on pve01"
after1=$(state pve01)
[ "$after1" != "${before[pve01]}" ] || fail "pve01 reads back as before after slice 1"

site slice2.log --limit pve02,pve03
[ -z "$(recap slice2.log pve01)" ] || fail "slice 2 (pve02,pve03) ran on pve01"
[ "$(state pve01)" = "$after1" ] || fail "slice 2 (pve02,pve03) changed pve01"
for n in pve02 pve03; do
  [ "$(recap slice2.log "$n")" -gt 0 ] 2>/dev/null || fail "slice 2 did not change $n"
  "$lab" ssh --dir "$labdir" "$n" 'zpool list -H -o name nvme-vm' >/dev/null || fail "slice 2 made no pool on $n"
done

site whole.log
for n in pve01 pve02 pve03; do
  [ "$(recap whole.log "$n")" = 0 ] || { cat "$work/whole.log"; fail "$n not converged by its slice"; }
done
echo "slicing: disjoint --limit slices (pve01 | pve02,pve03) converged base and zfs on their own hosts only; the whole group then changed=0"
