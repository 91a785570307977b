#!/usr/bin/env bash
# A no-op clone-and-configure of one VM (issue 19): gopve.proxmox.pve_clone
# next to what users run today, community.general.proxmox_kvm (clone) +
# proxmox_nic + proxmox_disk (Debian's `ansible` package over
# python3-proxmoxer), against the same converged lab VM, measured side by
# side in one run, rounds interleaved so load changes hit every variant
# alike (the machine is shared and noisy: only figures taken together
# compare). API requests come from the lab's request log, one counted run
# per variant. It reports; it fails only on a wrong result (a failed run,
# or a change on the converged VM), never on timings.
#
#   pve_clone api   one pve_clone task from the controller over the API
#                   (api_host, token, pinned fingerprint): the same shape as
#                   the community.general tasks
#   pve_clone node  the same task delegated to pve01 over SSH, local mode,
#                   as roles/pve_clone runs it
#   c.g. 3 tasks    proxmox_kvm (clone by template name, cores, memory),
#                   proxmox_nic (net0), proxmox_disk (scsi0 resized) from the
#                   controller. proxmox_kvm answers "already exists" without
#                   comparing cores or memory (update: true would PUT the
#                   config and report changed every run, c.p#24): its no-op
#                   checks less than pve_clone's read-back does
#   empty           a play of one meta: noop task (ansible-playbook start-up,
#                   subtracted for the "task s" column: fastest run minus
#                   fastest empty play, the runs least disturbed by others)
#
# BENCH_ROUNDS (9), BENCH_PVE (9).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/bench-lib.sh
. hack/bench-lib.sh
R=${BENCH_ROUNDS:-9}
PVE=${BENCH_PVE:-9}
repo=$PWD
bench_init bench-clone
py=/usr/bin/python3 # Debian's interpreter: the one its packages install into

# The third-party client, from Debian (as the lab fidelity test uses it).
if ! $py -c 'import proxmoxer, requests' 2>/dev/null ||
  ! ansible-doc -t module -j community.general.proxmox_disk 2>/dev/null | grep '"module"' >/dev/null; then
  echo "bench-clone: installing Debian's ansible and python3-proxmoxer"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q ansible python3-proxmoxer python3-requests >/dev/null
fi

bench_build build gopve
bench_collection galaxy.yml meta plugins roles bin

labdir=$work/lab
echo "bench-clone: 1-node PVE $PVE lab with the debian-12 template"
bench_lab_up "$labdir" --nodes 1 --pve "$PVE" --guests "$repo/hack/demo/guests.json"
inv=$labdir/inventory.yml
sock=$labdir/control.sock

# One VM, one set of settings, written once for both clients.
vmid=200 name=bench-vm cores=2 memory=2048 tag=10 size=8G
api='api_host: "{{ hostvars.pve01.ansible_host }}"
        api_token_id: "{{ pve_api_token_id }}"
        api_token_secret: "{{ pve_api_token_secret }}"'
# pve_clone's own arguments, the same from the controller and on the node.
clone_args="        vmid: $vmid
        name: $name
        template: debian-12
        node: pve01
        cores: $cores
        memory: $memory
        nets: {net0: {bridge: vmbr0, tag: $tag}}
        disks: {scsi0: $size}"
cat >"$work/pve_clone_api.yml" <<PLAY
- hosts: localhost
  gather_facts: false
  tasks:
    - gopve.proxmox.pve_clone:
        $api
        api_fingerprint: "{{ hostvars.pve01.pve_api_fingerprint }}"
$clone_args
PLAY
cat >"$work/pve_clone_node.yml" <<PLAY
- hosts: pve01
  gather_facts: false
  tasks:
    - gopve.proxmox.pve_clone:
$clone_args
PLAY
# community.general's token options: user and token name apart.
cg="api_host: \"{{ hostvars.pve01.ansible_host }}\"
        api_user: \"{{ pve_api_token_id.split('!')[0] }}\"
        api_token_id: \"{{ pve_api_token_id.split('!')[1] }}\"
        api_token_secret: \"{{ pve_api_token_secret }}\"
        validate_certs: false"
cat >"$work/community.yml" <<PLAY
- hosts: localhost
  gather_facts: false
  tasks:
    - community.general.proxmox_kvm:
        $cg
        node: pve01
        clone: debian-12
        name: $name
        newid: $vmid
        full: true
        cores: $cores
        memory: $memory
        timeout: 120
    - community.general.proxmox_nic:
        $cg
        vmid: $vmid
        interface: net0
        model: virtio
        bridge: vmbr0
        tag: $tag
    - community.general.proxmox_disk:
        $cg
        vmid: $vmid
        disk: scsi0
        size: $size
        state: resized
PLAY
cat >"$work/empty.yml" <<PLAY
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.meta: noop
PLAY

# The controller as a host of its own, for the API variants.
printf 'all:\n  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n' "$py" >"$work/local.yml"
bench_ansible_env
export ANSIBLE_PIPELINING=True
n=0
run() { # run NAME [converged]: seconds of one run; a converged run must change nothing
  local name=$1 t0 t1 log
  n=$((n + 1))
  log=$work/run$n-$name.log
  t0=$(date +%s.%N)
  ansible-playbook -i "$inv" -i "$work/local.yml" -e @"$labdir/credentials.yml" \
    "$work/$name.yml" >"$log" 2>&1 ||
    { tail -30 "$log" >&2; echo "bench-clone: $name failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  if [ "${2:-}" = converged ] && grep -Eq 'changed=[1-9]' "$log"; then
    tail -30 "$log" >&2; echo "bench-clone: $name changed the converged VM" >&2; exit 1
  fi
  echo "$t1 - $t0" | bc -l
}
requests() { curl -s --unix-socket "$sock" "$@" http://lab/v1/requests; }

# Converge (untimed): pve_clone clones and configures the VM; then the
# community.general play must find nothing to change on it (it is the same
# VM both ways), and pve_clone again nothing after it.
run pve_clone_api >/dev/null
run pve_clone_api converged >/dev/null
run community >/dev/null
grep -Eq 'changed=[1-9]' "$work/run$n-community.log" &&
  echo "bench-clone: note: community.general changed the VM pve_clone had converged (its first run)"
run community converged >/dev/null
run pve_clone_node converged >/dev/null
run pve_clone_api converged >/dev/null

variants="pve_clone_api pve_clone_node community"
declare -A reqs writes
for v in $variants; do
  requests -X DELETE >/dev/null
  run "$v" converged >/dev/null
  read -r "reqs[$v]" "writes[$v]" < <(requests | $py -c 'import json, sys
r = [x for x in json.load(sys.stdin) if x["path"] != "/access/ticket"]
print(len(r), sum(1 for x in r if x["method"] not in ("GET", "HEAD")))')
done

echo "bench-clone: $R interleaved rounds of: empty $variants"
declare -A times
for _ in $(seq "$R"); do
  for v in empty $variants; do
    t=$(run "$v" converged)
    times[$v]="${times[$v]:-} $t"
  done
done
stat() { # stat median|min "SECONDS…"
  local xs
  read -ra xs <<<"$2" # the space-separated times, one argument each
  $py -c 'import statistics, sys
xs = [float(x) for x in sys.argv[2:]]
print(statistics.median(xs) if sys.argv[1] == "median" else min(xs))' "$1" "${xs[@]}"
}
declare -A med low
for v in empty $variants; do
  med[$v]=$(stat median "${times[$v]}")
  low[$v]=$(stat min "${times[$v]}")
done

label() {
  case $1 in
    pve_clone_api) echo "gopve.proxmox.pve_clone, controller (API)" ;;
    pve_clone_node) echo "gopve.proxmox.pve_clone, on pve01 (local)" ;;
    community) echo "c.g. proxmox_kvm + proxmox_nic + proxmox_disk" ;;
  esac
}
tasks() { [ "$1" = community ] && echo 3 || echo 1; }
ratio() { # noise can make a difference <= 0: no ratio then, never a failure
  $py -c 'import sys; a, b = map(float, sys.argv[1:]); print(a / b if b > 0 else float("nan"))' "$1" "$2"
}
task() { echo "${low[$1]} - ${low[empty]}" | bc -l; }
printf '\nno-op clone-and-configure of one VM (VM %s on pve01, converged), median of %d interleaved rounds\n' "$vmid" "$R"
printf '  %-46s %7s %7s %8s %6s %9s %7s\n' "" "wall s" "min s" "task s" "tasks" "API reqs" "writes"
for v in $variants; do
  printf '  %-46s %7.2f %7.2f %8.2f %6d %9d %7d\n' "$(label "$v")" "${med[$v]}" "${low[$v]}" "$(task "$v")" \
    "$(tasks "$v")" "${reqs[$v]}" "${writes[$v]}"
done
printf '  %-46s %7.2f %7.2f\n' "empty play (one meta: noop)" "${med[empty]}" "${low[empty]}"
printf '  ratio c.g. / pve_clone (API): wall %.2f, min %.2f, task s %.2f, API requests %.2f (target >= 5; pve_clone <= 3 requests)\n' \
  "$(ratio "${med[community]}" "${med[pve_clone_api]}")" "$(ratio "${low[community]}" "${low[pve_clone_api]}")" \
  "$(ratio "$(task community)" "$(task pve_clone_api)")" \
  "$(ratio "${reqs[community]}" "${reqs[pve_clone_api]}")"
printf '  (wall s: median, min s: fastest run; task s: fastest run minus the fastest empty play; API reqs: the lab request log of one run, tickets aside; c.g.: community.general %s, proxmoxer %s)\n' \
  "$($py -c 'import json; print(json.load(open("/usr/lib/python3/dist-packages/ansible_collections/community/general/MANIFEST.json"))["collection_info"]["version"])')" \
  "$($py -c 'import proxmoxer; print(proxmoxer.__version__)')"
echo "(machine: $(bench_machine), shared; load average $(cut -d' ' -f1-3 /proc/loadavg); PVE $PVE lab; ratios from one run are what compare)"
