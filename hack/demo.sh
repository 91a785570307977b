#!/usr/bin/env bash
# make demo: build the lab, start a 3-node PVE lab (or reuse the running one),
# prove Ansible reaches every node over SSH, then run the collection's phases
# (playbooks/site.yml) against it the way a user would: check mode first, the
# real run, and a second run that must change nothing.
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

# The collection as a user installs it: built with ansible-galaxy (only this
# machine's binary — the lab nodes are this machine) and installed into a
# collections path of the demo's own, so nothing in ~/.ansible changes.
collections=/var/lib/gopve/collections
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/src/bin"
cp -r galaxy.yml meta plugins roles playbooks README.md LICENSE CHANGELOG.md "$stage/src/"
cp "bin/gopve_$(uname -s | tr A-Z a-z)_$(uname -m)" "$stage/src/bin/"
ansible-galaxy collection build --force --output-path "$stage" "$stage/src" >/dev/null
ansible-galaxy collection install --force -p "$collections" "$stage"/gopve-proxmox-*.tar.gz >/dev/null
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_RETRY_FILES_ENABLED=0
vars=(-e @hack/demo/group_vars.yml)
site=playbooks/site.yml

echo
echo "demo: ansible-playbook --check --diff $site   (predicts; writes nothing)"
ansible-playbook -i "$inventory" "${vars[@]}" --check --diff "$site" | tail -n 6
echo
echo "demo: ansible-playbook $site   (the real run: every change read back before it is reported)"
ansible-playbook -i "$inventory" "${vars[@]}" "$site" | tail -n 6
echo
echo "demo: ansible-playbook $site   (again: must be changed=0 everywhere)"
second=$(ansible-playbook -i "$inventory" "${vars[@]}" "$site")
tail -n 6 <<<"$second"
if grep -Eq 'changed=[1-9]|failed=[1-9]' <<<"$second"; then
  echo "demo: the second run was not clean" >&2
  exit 1
fi
ansible -i "$inventory" pve -m shell -a 'pveversion; zpool list -H -o name,health,size' | sed 's/^/  /'

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
