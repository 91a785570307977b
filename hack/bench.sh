#!/usr/bin/env bash
# make bench: cost of a gopve.proxmox task next to Ansible's cheapest ones,
# measured side by side in one run against a 1-node lab over real SSH, and
# printed with ratios (this machine is shared and noisy: only figures taken
# together compare).
#
#  1. ms per no-op task, N tasks per play, R rounds, the variants interleaved
#     so load changes hit them alike, an empty play of the same shape
#     subtracted (SSH set-up and play start-up are not counted):
#       raw          ansible.builtin.raw: true (the floor: one SSH command)
#       ping         ansible.builtin.ping (Python AnsiballZ)
#       command      ansible.builtin.command: true
#       zfs fast     gopve.proxmox.pve_zfs on a converged pool, fast path
#                    (one remote command: check the cached binary, args on stdin)
#       zfs fallback the same task with gopve_fast_path: false (wrapper module
#                    through Ansible's _execute_module: tmp dir, args file)
#       test fast    gopve.proxmox.gopve_test no-op on the fast path: the path's
#                    own cost, without pve_zfs's reads of the pool
#     and the remote commands per task of each (SSH EXEC lines of a -vvv run,
#     sftp transfers included, divided by N: the fast path's first task probes).
#  2. wall time (median of 10) and peak RSS of one pve_zfs run on the node,
#     no Ansible around it (the cached binary, args on stdin, as the fast
#     path runs it), and one module process vs Python's AnsibleModule
#     (hack/bench_exec.py).
# Targets (issue 8): zfs fast within 3x raw, and at least 4x cheaper than ping.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/bench-lib.sh
. hack/bench-lib.sh
N=${BENCH_TASKS:-20}
R=${BENCH_ROUNDS:-3}
bench_init bench
bench_build build-test "the test-tagged binary"

# The collection as installed, plus the generated gopve_test plugins.
bench_collection galaxy.yml meta plugins
mkdir -p "$coll/bin"
cp "$bin" "$coll/bin/gopve_linux_x86_64"
"$bin" gen-plugins --out "$coll" --module gopve_test >/dev/null

labdir=$work/lab
bench_lab_up "$labdir" --nodes 1 --pve 8
inv=$labdir/inventory.yml

zfs='    - gopve.proxmox.pve_zfs: {name: bench, devices: [/dev/nvme0n1]}'
bench_play empty '    - ansible.builtin.meta: noop'
bench_play raw '    - ansible.builtin.raw: "true"'
bench_play ping '    - ansible.builtin.ping:'
bench_play command '    - ansible.builtin.command: "true"'
bench_play zfs_fast "$zfs"
bench_play zfs_fallback "$zfs
      vars: {gopve_fast_path: false}"
bench_play test_fast '    - gopve.proxmox.gopve_test: {name: bench}'
variants="raw ping command zfs_fast zfs_fallback test_fast"

bench_ansible_env
run() { bench_time "$@"; } # run NAME [ARGS]: seconds of one ansible-playbook run
# Create the pool (untimed): every timed zfs task is then a converged no-op.
run zfs_fast >/dev/null
run zfs_fast >/dev/null
grep -q 'changed=0' "$work/zfs_fast.log" || { echo "bench: pve_zfs was not converged after its first run" >&2; exit 1; }

# Remote commands per task, from one -vvv run of each variant.
declare -A trips
for v in $variants; do
  run "$v" -vvv >/dev/null
  trips[$v]=$(echo "$(grep -c ' SSH: EXEC ' "$work/$v.log") / $N" | bc -l)
done

# shellcheck disable=SC2086 # variants: one name a word
bench_rounds $variants

printf '\nper no-op task over SSH (%d tasks x %d rounds, empty-play baseline subtracted)\n' "$N" "$R"
printf '  %-44s %8s %14s\n' "" "ms/task" "remote cmds"
label() {
  case $1 in
    raw) echo "ansible.builtin.raw: true" ;;
    ping) echo "ansible.builtin.ping" ;;
    command) echo "ansible.builtin.command: true" ;;
    zfs_fast) echo "gopve.proxmox.pve_zfs, fast path" ;;
    zfs_fallback) echo "gopve.proxmox.pve_zfs, fallback (wrapper)" ;;
    test_fast) echo "gopve.proxmox.gopve_test no-op, fast path" ;;
  esac
}
for v in $variants; do
  printf '  %-44s %8.1f %14.2f\n' "$(label "$v")" "${ms[$v]}" "${trips[$v]}"
done
printf '  ratio pve_zfs fast / raw        %6.2f   (target <= 2, issue 24)\n' "$(bench_ratio zfs_fast raw)"
printf '  ratio pve_zfs fast / ping       %6.2f   (target <= 0.25)\n' "$(bench_ratio zfs_fast ping)"
printf '  ratio pve_zfs fallback / fast   %6.2f   (what the fast path saves)\n' "$(bench_ratio zfs_fallback zfs_fast)"

printf '  ratio gopve_test fast / raw     %6.2f   (the fast path alone)\n' "$(bench_ratio test_fast raw)"

# One pve_zfs run on the node, as the fast path runs it, without Ansible:
# how much of a task is the module's own reading of the pool.
cached=$(bench_cached)
node=$("$lab" ssh --dir "$labdir" pve01 "python3 -c '
import resource, statistics, subprocess, time
args = b\"{\\\"_gopve_module\\\": \\\"pve_zfs\\\", \\\"name\\\": \\\"bench\\\", \\\"devices\\\": [\\\"/dev/nvme0n1\\\"], \\\"_ansible_verbosity\\\": 3}\"
times = []
for _ in range(10):
    t = time.perf_counter()
    out = subprocess.run([\"$cached\", \"-\"], input=args, capture_output=True, check=True).stdout
    times.append(time.perf_counter() - t)
    assert b\"\\\"changed\\\":false\" in out, out
import json
print(statistics.median(times) * 1000, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, json.loads(out)[\"gopve_cost\"][\"processes\"])
'")
read -r node_ms node_rss node_procs <<<"$node"
printf '  one pve_zfs run on the node     %6.1f ms (no Ansible; it runs the pool/timer reads itself: %d processes, gopve_cost)\n' "$node_ms" "$node_procs"
printf '  peak RSS of one pve_zfs run     %6.1f MiB (largest of the binary and the tools it ran)\n' "$node_rss"

echo
/usr/bin/python3 hack/bench_exec.py "$bin" "$work/exec"
