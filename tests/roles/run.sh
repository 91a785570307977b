#!/usr/bin/env bash
# Role wrapper tests: roles/pve_base, pve_zfs, pve_storage, pve_cluster and pve_ha, run by the installed
# ansible-playbook against localhost, with the seed inventory's variables.
# The modules are replaced by a capture stub (a Python module that records the
# arguments it got and changes nothing), so this checks exactly what the roles
# add: variable names, defaults, argument_specs validation and the arguments
# handed to gopve.proxmox.pve_base / pve_zfs / pve_storage. The modules themselves are
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
# The stub gets its interpreter line here: a module needs one, and in the
# repository a shebang outside plugins/modules fails ansible-test sanity's
# shebang check (make lint).
for m in pve_base pve_zfs pve_storage pve_cluster pve_access pve_clone pve_container pve_ha; do
  { printf '#!/usr/bin/python3\n'; cat "$HERE/capture.py"; } >"$coll/plugins/modules/$m.py"
done

cp "$HERE/inventory.yml" "$HERE/roles.yml" "$work/"
export ANSIBLE_COLLECTIONS_PATH=/gopve/collections ANSIBLE_NOCOLOR=1 \
  ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_LOCALHOST_WARNING=0

# ran_tasks LOG WHAT: the recap of LOG shows tasks run (exit 0 with no
# host matched or every task skipped would prove nothing).
ran_tasks() {
  grep -Eq ': ok=[1-9][0-9]* .*failed=0' "$1" || { echo "roles/run.sh: $2 ran no task (see the recap above)" >&2; exit 1; }
}

# no_argsplat LOG WHAT: no task handed a module a whole dict as its args.
# ansible-core warns on each such task ("Using a variable for a task's
# 'args' is unsafe in some situations", the FAQ's argsplat-unsafe): the
# roles pass every option by name, so a host fact cannot inject one.
no_argsplat() {
  if grep -Ein "argsplat|unsafe in some situations" "$1"; then
    echo "roles/run.sh: $2 warned that a task's args come from a variable (see above)" >&2; exit 1
  fi
}

# ansible-core 2.14 (this machine)
echo "== ansible-core $(ansible --version | sed -n '1s/.*core \([0-9.]*\).*/\1/p')"
ANSIBLE_COLLECTIONS_PATH=$work/collections ansible-playbook -i "$work/inventory.yml" "$work/roles.yml" "$@" 2>&1 | tee "$work/run-214.log"
ran_tasks "$work/run-214.log" "ansible-core 2.14"
no_argsplat "$work/run-214.log" "ansible-core 2.14"

# The site playbook: one tag per phase, each selecting that phase's role
# alone (issue 19), read with --list-tasks (nothing runs). Each role's
# argument validation is tagged `always` by Ansible: it is left out.
cp -r "$REPO/playbooks" "$coll/playbooks"
phases="base:pve_base zfs:pve_zfs cluster:pve_cluster access:pve_access storage:pve_storage clone:pve_clone container:pve_container ha:pve_ha"
for p in $phases; do
  tag=${p%%:*} role=${p#*:}
  ANSIBLE_COLLECTIONS_PATH=$work/collections ansible-playbook -i "$work/inventory.yml" gopve.proxmox.site \
    --list-tasks --tags "$tag" | grep -v "Validating arguments against arg spec" >"$work/tags-$tag.log"
  grep -q "gopve.proxmox.$role : " "$work/tags-$tag.log" ||
    { cat "$work/tags-$tag.log"; echo "roles/run.sh: --tags $tag lists no task of $role" >&2; exit 1; }
  for q in $phases; do
    other=${q#*:}
    [ "$other" = "$role" ] && continue
    if grep -q "gopve.proxmox.$other : " "$work/tags-$tag.log"; then
      cat "$work/tags-$tag.log"; echo "roles/run.sh: --tags $tag also lists $other" >&2; exit 1
    fi
  done
done
echo "site playbook: --tags selects each phase alone"

# The example inventory (playbooks/inventory, the seed's hosts.yml and
# group_vars) is valid and drives the whole site: listed, the hosts of each
# play, then the site run over it with every host on the local connection and
# the capture stubs, the arguments each module got checked
# (tests/roles/example_inventory.py).
ansible-inventory -i "$REPO/playbooks/inventory" --list >"$work/example-inventory.json"
# Every play of the site targets the three pve hosts, never pbs01 — but
# clone.yml's per-host play (group pve_vms, seed 002's VMs as inventory
# hosts), which the example inventory has no hosts for.
ANSIBLE_COLLECTIONS_PATH=$work/collections ansible-playbook -i "$REPO/playbooks/inventory" \
  gopve.proxmox.site --list-hosts >"$work/example-hosts.log"
plays=$(grep '^  play #' "$work/example-hosts.log" | grep -vc '(pve_vms)')
with3=$(grep -c 'hosts (3):' "$work/example-hosts.log")
grep -A2 '(pve_vms)' "$work/example-hosts.log" | grep -q 'hosts (0):' ||
  { cat "$work/example-hosts.log"; echo "roles/run.sh: the per-host VM play targets hosts the example inventory does not declare" >&2; exit 1; }
if [ "$plays" -lt 4 ] || [ "$plays" != "$with3" ] || grep -q pbs01 "$work/example-hosts.log"; then
  cat "$work/example-hosts.log"; echo "roles/run.sh: a site play over playbooks/inventory does not target exactly pve01-03" >&2; exit 1
fi
ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_STDOUT_CALLBACK=json ansible-playbook \
  -i "$REPO/playbooks/inventory" -e ansible_connection=local -e ansible_python_interpreter=/usr/bin/python3 \
  gopve.proxmox.site >"$work/example-site.json" 2>"$work/example-site.err" ||
  { cat "$work/example-site.err" "$work/example-site.json" >&2; echo "roles/run.sh: the site over playbooks/inventory failed" >&2; exit 1; }
no_argsplat "$work/example-site.err" "the site over playbooks/inventory"
/usr/bin/python3 "$HERE/example_inventory.py" "$work/example-inventory.json" "$work/example-site.json"

# ansible-core 2.19 (the cached Debian 13 root), in an overlay so the cached
# root is never written, with the work directory bind-mounted at /gopve.
trixie=${GOPVE_TRIXIE_ROOT:-/var/cache/gopve/roots/trixie}
if [ "${GOPVE_ROLES_219:-1}" = 1 ] && [ -x "$trixie/usr/bin/ansible-playbook" ]; then
  echo "== ansible-core from $trixie"
  mkdir -p "$work/ovl/up" "$work/ovl/work" "$work/ovl/root"
  # shellcheck disable=SC2016 # $1 and $2 are the inner bash's
  unshare -m --propagation private bash -euc '
    mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/ovl/up,workdir=$2/ovl/work" "$2/ovl/root"
    mount -t proc proc "$2/ovl/root/proc"
    mkdir -p "$2/ovl/root/gopve" && mount --bind "$2" "$2/ovl/root/gopve"
    shift 2
    chroot "$0" env HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      ANSIBLE_COLLECTIONS_PATH=/gopve/collections ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 \
      ansible-playbook -i /gopve/inventory.yml /gopve/roles.yml "$@"
  ' "$work/ovl/root" "$trixie" "$work" "$@" 2>&1 | tee "$work/run-219.log"
  ran_tasks "$work/run-219.log" "ansible-core 2.19"
  no_argsplat "$work/run-219.log" "ansible-core 2.19"
elif [ "${GOPVE_REQUIRE_LAB:-0}" != 0 ]; then
  echo "roles/run.sh: ansible-core 2.19 not run (GOPVE_ROLES_219=${GOPVE_ROLES_219:-1}, $trixie/usr/bin/ansible-playbook) and GOPVE_REQUIRE_LAB is set" >&2
  exit 1
else
  echo "== skipped ansible-core 2.19: no $trixie/usr/bin/ansible-playbook (hack/debian-root.sh trixie builds it)"
fi
