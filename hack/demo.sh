#!/usr/bin/env bash
# make demo: build the lab, start a fresh 3-node PVE lab (the previous demo
# lab, if any, is taken down first), prove Ansible reaches every node over
# SSH, then run the collection's phases (playbooks/site.yml) against it the
# way a user would: check mode first, the real run, and a second run that
# must change nothing — all seven phases, down to CT 200 (the GitLab
# runner, from a CT template) and VM 201 on the ZFS pool's storage, both
# replicated to the other nodes and under HA. It ends with the tasks changed
# per phase in each run and the cluster, storage, guest, replication and HA
# state read back. The lab stays up afterwards.
#   PVE=8|9 (default 9)  NODES (default 3)  DEMO_DIR (default /var/lib/gopve/labs/demo)
#   GOPVE_LAB (the lab binary)  GOPVE_COLLECTIONS (where the collection is installed)
set -euo pipefail
cd "$(dirname "$0")/.."

pve=${PVE:-9}
nodes=${NODES:-3}
demo_dir=${DEMO_DIR:-/var/lib/gopve/labs/demo}
# The lab binary lives outside the checkout so it is never packaged; the
# supervisor it starts keeps running after this script ends.
lab=${GOPVE_LAB:-/var/lib/gopve/bin/lab}

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: the lab needs root (namespaces, overlayfs, loop devices)" >&2
  exit 1
fi

mkdir -p "$(dirname "$lab")"
echo "demo: building $lab"
CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab

[ -e "$demo_dir" ] && "$lab" down --dir "$demo_dir" >/dev/null
# The lab starts with a VM template on pve01 for the clone phase. Its guest
# clocks are short (a lab minute of 1 s for replication, HA manager rounds of
# 0.5 s) so that the ha phase's first sync (H1) and HA start take seconds.
out=$("$lab" up --nodes "$nodes" --pve "$pve" --dir "$demo_dir" --guests hack/demo/guests.json \
  --minute 1s --ha-round 500ms)
echo "$out"
inventory=$(sed -n 's/^inventory: *//p' <<<"$out")
dir=$(dirname "$inventory")

echo
echo "demo: ansible -i $inventory all -m ping"
ansible -i "$inventory" all -m ping

# The container phase's CT template, as \`pveam download local …\` leaves it:
# a file in local's template/cache (local:vztmpl/…); pct create fails
# without one, as on PVE. Its contents do not matter to the lab.
"$lab" ssh --dir "$dir" pve01 \
  'head -c 65536 /dev/urandom > /var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst'

# The collection as a user installs it: built with ansible-galaxy (only this
# machine's binary — the lab nodes are this machine) and installed into a
# collections path of the demo's own, so nothing in ~/.ansible changes.
collections=${GOPVE_COLLECTIONS:-/var/lib/gopve/collections}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/src/bin"
cp -r galaxy.yml meta plugins roles playbooks README.md LICENSE CHANGELOG.md "$stage/src/"
cp "bin/gopve_$(uname -s | tr '[:upper:]' '[:lower:]')_$(uname -m)" "$stage/src/bin/"
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_RETRY_FILES_ENABLED=0
# Every run ends with the plan callback's phase x host table.
export ANSIBLE_CALLBACKS_ENABLED=gopve.proxmox.plan
ansible-galaxy collection build --force --output-path "$stage" "$stage/src" >/dev/null
ansible-galaxy collection install --force -p "$collections" "$stage"/gopve-proxmox-*.tar.gz >/dev/null
vars=(-e @hack/demo/group_vars.yml)
site=playbooks/site.yml
recap() { sed -n '/^PLAY RECAP/,$p'; }  # the recap, then the plan table

# Each run also leaves the plan callback's JSON, for the summary at the end.
plans=$stage/plans
mkdir -p "$plans"
play() {
  local start=$SECONDS
  GOPVE_PLAN_JSON=$plans/$1.json ansible-playbook -i "$inventory" "${vars[@]}" "${@:2}" "$site"
  echo "demo: $1 run took $((SECONDS - start)) s" >&2
}

echo
echo "demo: ansible-playbook --check --diff $site   (predicts; writes nothing)"
echo "      (on a fresh lab the clone and ha phases meet a storage, a cluster and a guest that earlier"
echo "       phases of the same run create: the roles name them (created_earlier), and each is assumed,"
echo "       with a warning saying it does not exist yet; anything else missing fails as a real run does)"
play check --check --diff | recap
echo
echo "demo: ansible-playbook $site   (the real run: every change read back before it is reported)"
play real | recap
echo
echo "demo: ansible-playbook $site   (again: must be changed=0 everywhere)"
second=$(play second)
recap <<<"$second"
if grep -Eq 'changed=[1-9]|failed=[1-9]' <<<"$second"; then
  echo "demo: the second run was not clean" >&2
  exit 1
fi

echo "demo: tasks changed per phase (check: predicted)"
python3 - "$plans" <<'PY'
import json, sys
runs = ["check", "real", "second"]
plans = {r: json.load(open("%s/%s.json" % (sys.argv[1], r))) for r in runs}
phases = []
for r in runs:
    for t in plans[r]["tasks"]:
        if t["phase"] not in phases and t["phase"] != "other":
            phases.append(t["phase"])
print("  %-10s %6s %6s %6s" % ("phase", *runs))
for p in phases:
    n = [sum(1 for t in plans[r]["tasks"] if t["phase"] == p and t["changed"]) for r in runs]
    print("  %-10s %6d %6d %6d" % (p, *n))
predicted = sorted((t["phase"], t["host"], t["task"]) for t in plans["check"]["tasks"] if t["changed"])
changed = sorted((t["phase"], t["host"], t["task"]) for t in plans["real"]["tasks"] if t["changed"])
print("  check predicted exactly the tasks the real run changed: %s" % ("yes" if predicted == changed else "NO"))
sys.exit(0 if predicted == changed else 1)
PY

echo "demo: what the nodes say now"
"$lab" ssh --dir "$dir" pve01 'pvecm status | grep -E "^(Name|Nodes|Quorate):"; pvesm status | sed 1d | cut -c1-60; qm list | sed 1d; pct list | sed 1d' || true
echo "demo: replication and HA (pvesr status, ha-manager status)"
"$lab" ssh --dir "$dir" pve01 'pvesr status; ha-manager status' || true
if [ "$pve" -ge 9 ]; then
  "$lab" ssh --dir "$dir" pve01 'ha-manager rules config' || true
fi
mapfile -t node_names < <(sed -n 's/^ *\(pve[0-9][0-9]*\):$/\1/p' "$inventory")
for node in "${node_names[@]}"; do
  printf '  %s: %s | %s\n' "$node" "$("$lab" ssh --dir "$dir" "$node" pveversion)" \
    "$("$lab" ssh --dir "$dir" "$node" 'zpool list -H -o name,health,size' | tr '\t' ' ')"
done

cat <<USAGE

The lab is up and stays up. What you can do with it:
  ansible -i $inventory pve -m shell -a 'pveversion; ls /etc/apt/sources.list.d'
  ANSIBLE_COLLECTIONS_PATH=$collections ansible-playbook -i $inventory -e @hack/demo/group_vars.yml playbooks/site.yml
  ansible-playbook -i $inventory -e @$dir/credentials.yml <your playbook>
  $lab ssh --dir $dir pve01      # a root shell on pve01
  $lab status --dir $dir
  $lab down --dir $dir           # stop everything, remove $dir

Each node is a fresh PVE $pve: enterprise repositories (401 without subscription),
pve-manager one patch behind the no-subscription repository, blank /dev/nvme0n1 for a
ZFS pool, and the PVE API on https://<node address>:8006 (credentials in
$dir/credentials.yml).
USAGE
