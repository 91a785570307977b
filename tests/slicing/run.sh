#!/usr/bin/env bash
# Job slicing and growth (AWX / Automation Platform, issue 19): the site
# playbook's base, zfs, cluster and storage phases run as disjoint slices
# of one inventory, each changing its own hosts only; then a 4th node is
# added with `site --limit pve04`. Read back on the nodes themselves (every
# file a node wrote: its overlay's upper directory), the simulator's
# request log (writes per node) and the cluster's /etc/pve, never from the
# recap alone. On a fresh 4-node lab whose inventory first holds three:
#   1. the other order: a --limit slice without the primary (pve02,pve03)
#      run before the primary's fails with one sentence naming the primary,
#      and nothing changed anywhere;
#   2. an inventory sliced as AWX slices it (awx/main/models/inventory.py,
#      Inventory.get_script_data: hosts sorted by name, hosts[n-1::count],
#      only those hosts and their variables, the groups' variables kept):
#      its slice 2 (pve02) lacks the primary, so the cluster and the
#      storage phases each refuse with one sentence, nothing changed;
#   3. slice 1 = pve01 (the primary), --check first (nothing written, as
#      many changed tasks predicted as the run makes): creates the cluster and declares the
#      storages for itself (pve02, pve03 are not members yet: left out of
#      nodes, with a warning); pve02 and pve03 unchanged, no write to their
#      API;
#   4. slice 2 = pve02,pve03, run by the execution-environment controller
#      (Debian 13's ansible-core 2.19 and nothing else: no `ansible`
#      package, no other collection): base and zfs on themselves, their keys
#      authorized in the cluster's shared authorized_keys (C7) and joined
#      one at a time (C4), then the storage's nodes list gains them (S1,
#      S2); pve01's own files unchanged and no write to its API;
#   5. the whole group then reports changed=0;
#   6. growth: pve04 added to the inventory, `site --limit pve04` converges
#      it through storage: pve04 joins, the ZFS storage's nodes list gains
#      pve04 in one write, nothing else is written (local's content is
#      already the cluster's), the other nodes' files unchanged.
# Needs root (the lab); `make test` runs it after the roles test.
set -euo pipefail
if [ "${1:-}" = __ee ]; then
  # __ee ROOT OVL WORK CMD...: in a private mount namespace, CMD chrooted
  # into an overlay of ROOT (never written) with WORK at the same path: the
  # collection, the inventories and the lab's keys.
  shift; root=$1 ovl=$2 cwd=$3; shift 3
  mkdir -p "$ovl/up" "$ovl/work" "$ovl/root"
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$ovl/up,workdir=$ovl/work" "$ovl/root"
  mount -t proc proc "$ovl/root/proc"
  mount --rbind /dev "$ovl/root/dev"
  mount -t tmpfs tmpfs "$ovl/root/tmp"
  mkdir -p "$ovl/root$cwd"
  mount --bind "$cwd" "$ovl/root$cwd"
  # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
  exec chroot "$ovl/root" /usr/bin/env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 \
    ANSIBLE_COLLECTIONS_PATH="$ANSIBLE_COLLECTIONS_PATH" ANSIBLE_LOCAL_TEMP="$ANSIBLE_LOCAL_TEMP" \
    ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 /bin/sh -c 'cd "$0" && exec "$@"' "$cwd" "$@"
fi
self=$(realpath "$0")
cd "$(dirname "$0")/../.."
PVE=${PVE:-9}
work=$(mktemp -d)
eeovl=$(mktemp -d)
lab=$work/bin/lab
labdir=
cleanup() {
  if [ -n "$labdir" ]; then "$lab" down --dir "$labdir" >/dev/null 2>&1 || true; fi
  rm -rf "$work" "$eeovl"
}
trap cleanup EXIT

make -s build >/dev/null
# The execution-environment controller: the Debian 13 root holds Debian's
# ansible-core and only the packages it Depends on (installed without
# Recommends: no `ansible` package, no other collection, no Python library
# of ours), what an image built from docs' recipe holds; besides it only
# libcrypt-openssl-rsa-perl, which the ticket tests run and the collection
# never uses.
trixie=$(./hack/debian-root.sh trixie)
mkdir -p "$(dirname "$lab")"
CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab
coll=$work/collections/ansible_collections/gopve/proxmox
mkdir -p "$coll"
cp -r galaxy.yml meta plugins roles playbooks bin "$coll/"
labdir=$work/lab
"$lab" up --nodes 4 --pve "$PVE" --dir "$labdir" >/dev/null
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
  HOME=$work/home ANSIBLE_LOCAL_TEMP=$work/home/tmp
mkdir -p "$work/home"

fail() { echo "slicing: $*" >&2; exit 1; }
cp hack/demo/group_vars.yml "$work/group_vars.yml"
ee() { unshare --mount --propagation private -- "$self" __ee "$trixie" "$eeovl" "$work" "$@"; }
# nothing but ansible-core there: no `ansible` package, no collection but
# ours and ansible-core's own
ee_version=$(ee ansible-playbook --version 2>/dev/null | head -1)
case $ee_version in *"core 2.19"*) ;; *) fail "the EE controller is not ansible-core 2.19: $ee_version" ;; esac
# shellcheck disable=SC2016 # ${db:Status-Status} is dpkg-query's format
status() { ee dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null || true; }
[ "$(status ansible-core)" = installed ] || fail "the EE controller has no ansible-core"
[ "$(status ansible)" != installed ] || fail "the EE controller has Debian's ansible package"
# (ansible._protomatter is ansible-core 2.19's own, inside its package)
colls=$(ee ansible-galaxy collection list 2>/dev/null | awk '/^[a-z0-9_]+\.[a-z0-9_]+ / && !/^ansible\./{print $1}' | sort -u | tr '\n' ' ')
[ "$colls" = "gopve.proxmox " ] || fail "the EE controller sees collections '$colls', not gopve.proxmox alone"

# Inventories: inv3 is the site before growth (pve04 not in it yet), inv4
# the lab's own; awx2 is inv3 as AWX hands slice 2 of 2 to its job.
python3 - "$labdir/inventory.yml" "$work" <<'EOF'
import copy, json, sys, yaml
inv = yaml.safe_load(open(sys.argv[1]))
pve = inv["all"]["children"]["pve"]
del pve["hosts"]["pve04"]
yaml.safe_dump(inv, open(sys.argv[2] + "/inv3.yml", "w"))
# Inventory.get_script_data(slice_number=2, slice_count=2)
names = sorted(pve["hosts"])
keep = names[1::2]
awx = copy.deepcopy(inv)
awx["all"]["children"]["pve"]["hosts"] = {h: pve["hosts"][h] for h in keep}
json.dump(awx, open(sys.argv[2] + "/awx2.json", "w"))
EOF

# upper NODE: the digest of every entry the node ever wrote (`lab digest`:
# type, mode, owner, content; without what changes on any login or task
# whatever the modules do, labctl.NotState; pvestatd settled first). The
# listing behind it is kept in $work/upper.NODE, so a failure names the
# entries that changed.
upper() {
  "$lab" digest --dir "$labdir" "$1" >"$work/upper.$1" || fail "lab digest $1 failed"
  sha256sum <"$work/upper.$1" | cut -d' ' -f1
}
ctl() { curl -sf --unix-socket "$labdir/control.sock" "http://lab$1" "${@:2}"; }
# writes NODE: the API writes the simulator logged for NODE since the last reset
writes() { ctl "/v1/requests?node=$1&mutating=1" | python3 -c 'import json,sys; [print(r["method"], r["path"], json.dumps(r.get("params") or {}, sort_keys=True)) for r in json.load(sys.stdin) or []]'; }
members() { ctl "/v1/nodes/$1/cluster" 2>/dev/null | python3 -c 'import json,sys; print(",".join(sorted(n["name"] for n in json.load(sys.stdin)["nodes"])))' 2>/dev/null || echo standalone; }
storage_nodes() { ctl /v1/nodes/pve01/pmxcfs/storage.cfg | python3 -c '
import json, sys
cur = None
for line in json.load(sys.stdin)["content"].splitlines():
    if not line.startswith(("\t", " ")) and ":" in line:
        cur = line.split(":", 1)[1].strip()
    elif cur == sys.argv[1] and line.strip().startswith("nodes "):
        print(line.split()[1])' "$1"; }
site() { # site LOG INVENTORY [ansible-playbook args]; fails the test if the run fails
  local log=$work/$1 inv=$2
  shift 2
  $controller ansible-playbook -i "$inv" -e @"$work/group_vars.yml" --tags base,zfs,cluster,storage \
    gopve.proxmox.site "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "the run $* failed"; }
}
controller=  # this machine's ansible-core 2.14; ee: the execution-environment controller
refused() { # refused LOG INVENTORY TAGS SENTENCE [args]: the run fails, saying SENTENCE
  local log=$work/$1 inv=$2 tags=$3 want=$4
  shift 4
  if ansible-playbook -i "$inv" -e @"$work/group_vars.yml" --tags "$tags" \
    gopve.proxmox.site "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "the run $* (tags $tags) succeeded; it must refuse"
  fi
  tr -s ' \n' ' ' <"$log" | grep -qF "$want" || { cat "$log" >&2; fail "the run $* (tags $tags) failed without saying: $want"; }
  echo "slicing: refused as expected ($tags $*): $(grep -o '"msg": "[^"]*"' "$log" | head -1)"
}
recap() { # recap LOG HOST: HOST's changed count, empty when it did not run
  sed -n "s/^$2 *: .*changed=\([0-9]*\).*/\1/p" "$work/$1"
}
snapshot() {
  for n in pve01 pve02 pve03 pve04; do
    hash[$n]=$(upper "$n")
    cp "$work/upper.$n" "$work/snap.$n"
  done
}
unchanged() { # unchanged WHAT NODE...: NODE's files as in the last snapshot, no API write to it
  local what=$1 n
  shift
  for n in "$@"; do
    [ "$(upper "$n")" = "${hash[$n]}" ] ||
      fail "$what changed $n's files: $(diff "$work/snap.$n" "$work/upper.$n" | grep '^[<>]' | head -20)"
    [ -z "$(writes "$n")" ] || fail "$what wrote to $n's API: $(writes "$n")"
  done
}
declare -A hash

# 1. the other order: the joiners' slice before the primary's
snapshot
ctl /v1/requests -X DELETE >/dev/null
refused order.log "$work/inv3.yml" cluster,storage \
  "pve_cluster_primary pve01 is outside this play (--limit, a job slice) and is not in cluster" --limit pve02,pve03
unchanged "the joiners' slice run first" pve01 pve02 pve03 pve04

# 2. AWX's slice 2 of 2 (pve02 alone, pve01 not in its inventory)
refused awx-cluster.log "$work/awx2.json" cluster "pve_cluster_primary pve01 is not in this inventory"
refused awx-storage.log "$work/awx2.json" storage "pve_cluster_primary pve01 is not in this inventory"
unchanged "AWX's slice 2 without the primary" pve01 pve02 pve03 pve04

# 3. slice 1: the primary; check mode first writes nothing anywhere and
#    predicts as many changed tasks as the real run then makes
site check1.log "$work/inv3.yml" --limit pve01 --check --diff
unchanged "slice 1 in check mode" pve01 pve02 pve03 pve04
site slice1.log "$work/inv3.yml" --limit pve01
[ "$(recap slice1.log pve01)" -gt 0 ] 2>/dev/null || fail "slice 1 did not change pve01"
[ "$(recap check1.log pve01)" = "$(recap slice1.log pve01)" ] ||
  fail "slice 1: check mode predicted $(recap check1.log pve01) changed tasks on pve01, the run made $(recap slice1.log pve01)"
for n in pve02 pve03; do [ -z "$(recap slice1.log "$n")" ] || fail "slice 1 (pve01) ran on $n"; done
unchanged "slice 1 (pve01)" pve02 pve03 pve04
[ "$(members pve01)" = pve01 ] || fail "slice 1: pve01's cluster is $(members pve01), not pve01 alone"
[ "$(storage_nodes nvme-vm)" = pve01 ] || fail "slice 1: storage nvme-vm lists nodes '$(storage_nodes nvme-vm)', not pve01 (pve02, pve03 are no members yet)"
[ "$(upper pve01)" != "${hash[pve01]}" ] || fail "pve01 reads back as before after slice 1"

# 4. slice 2: the joiners
snapshot
ctl /v1/requests -X DELETE >/dev/null
controller=ee site slice2.log "$work/inv3.yml" --limit pve02,pve03
[ -z "$(recap slice2.log pve01)" ] || fail "slice 2 (pve02,pve03) ran on pve01"
unchanged "slice 2 (pve02,pve03)" pve01 pve04
for n in pve02 pve03; do
  [ "$(recap slice2.log "$n")" -gt 0 ] 2>/dev/null || fail "slice 2 did not change $n"
  "$lab" ssh --dir "$labdir" "$n" 'zpool list -H -o name nvme-vm' >/dev/null || fail "slice 2 made no pool on $n"
done
[ "$(members pve01)" = pve01,pve02,pve03 ] || fail "after slice 2 the cluster is $(members pve01)"
[ "$(storage_nodes nvme-vm)" = pve01,pve02,pve03 ] || fail "after slice 2 nvme-vm lists nodes '$(storage_nodes nvme-vm)'"

# 5. the slices together converged the site
site whole.log "$work/inv3.yml"
for n in pve01 pve02 pve03; do
  [ "$(recap whole.log "$n")" = 0 ] || { cat "$work/whole.log"; fail "$n not converged by its slice"; }
done

# 6. growth: pve04 added to the inventory, site --limit pve04
snapshot
ctl /v1/requests -X DELETE >/dev/null
site grow.log "$labdir/inventory.yml" --limit pve04
[ "$(recap grow.log pve04)" -gt 0 ] 2>/dev/null || fail "site --limit pve04 did not change pve04"
unchanged "site --limit pve04" pve01 pve02 pve03
[ "$(members pve01)" = pve01,pve02,pve03,pve04 ] || fail "after the growth the cluster is $(members pve01)"
[ "$(storage_nodes nvme-vm)" = pve01,pve02,pve03,pve04 ] || fail "after the growth nvme-vm lists nodes '$(storage_nodes nvme-vm)'"
got=$(writes pve04 | grep -c /storage || true)
[ "$got" = 1 ] || fail "the growth sent $got storage writes, not the one that adds pve04 to nvme-vm's nodes: $(writes pve04)"
writes pve04 | grep -q '^PUT /storage/nvme-vm .*"nodes": "pve01,pve02,pve03,pve04"' ||
  fail "the growth's storage write is not nvme-vm's nodes list: $(writes pve04)"
echo "slicing: slices pve01 | pve02,pve03 (the latter from an ansible-core-only controller, $ee_version) converged base, zfs, cluster and storage on their own hosts (whole group then changed=0);" \
  "the joiners' slice first and AWX's slice without the primary refused with nothing changed; site --limit pve04 grew the cluster and its storage"
