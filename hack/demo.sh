#!/usr/bin/env bash
# make demo: build the lab, start a 3-node PVE lab (or reuse the running one),
# prove Ansible reaches every node over SSH, and say how to use it.
#   PVE=8|9 (default 9)  NODES (default 3)  SLOT (default: the running lab, else the first free slot)
set -euo pipefail
cd "$(dirname "$0")/.."

pve=${PVE:-9}
nodes=${NODES:-3}
slot_args=()
[ -n "${SLOT:-}" ] && slot_args=(--slot "$SLOT")
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

out=$("$lab" up --nodes "$nodes" --pve "$pve" "${slot_args[@]}")
echo "$out"
inventory=$(sed -n 's/^inventory: *//p' <<<"$out")
dir=$(dirname "$inventory")

echo
echo "demo: ansible -i $inventory all -m ping"
ansible -i "$inventory" all -m ping

cat <<USAGE

The lab is up and stays up. What you can do with it:
  ansible -i $inventory pve -m shell -a 'pveversion; ls /etc/apt/sources.list.d'
  ansible-playbook -i $inventory -e @$dir/credentials.yml <your playbook>
  $lab ssh --dir $dir pve01      # a root shell on pve01
  $lab status --dir $dir
  $lab down --dir $dir           # stop everything, remove $dir

Each node is a fresh PVE $pve: enterprise repositories (401 without subscription),
pve-manager one patch behind the no-subscription repository, blank /dev/nvme0n1 for a
ZFS pool, and the PVE API on https://<node address>:8006 (credentials in
$dir/credentials.yml).
USAGE
