#!/usr/bin/env bash
# Role wrapper tests: roles/pve_base and roles/pve_zfs, run by the installed
# ansible-playbook against localhost, with the seed inventory's variables.
# The modules are replaced by a capture stub (a Python module that records the
# arguments it got and changes nothing), so this checks exactly what the roles
# add: variable names, defaults, argument_specs validation and the arguments
# handed to gopve.proxmox.pve_base / pve_zfs. The modules themselves are
# tested in Go (modules-src/modules/…) and against the lab.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO/tests/roles
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

coll=$work/collections/ansible_collections/gopve/proxmox
mkdir -p "$coll/plugins/modules" "$coll/meta"
cp -r "$REPO/roles" "$coll/roles"
cp "$REPO/galaxy.yml" "$coll/"
printf 'requires_ansible: ">=2.14"\n' > "$coll/meta/runtime.yml"
for m in pve_base pve_zfs; do
  cp "$HERE/capture.py" "$coll/plugins/modules/$m.py"
done

export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 \
  ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_LOCALHOST_WARNING=0
ansible-playbook -i "$HERE/inventory.yml" "$HERE/roles.yml" "$@"
