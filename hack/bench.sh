#!/usr/bin/env bash
# make bench: speed and memory of the collection's module runtime, measured
# side by side in one run and printed as ratios (never as absolute targets:
# this machine is shared and noisy, ratios of runs taken together are not).
#
#  1. per-task cost over real SSH against a 1-node lab, N module runs each:
#       gopve warm  – gopve_test on a converged file, binary already cached
#       python copy – ansible.builtin.copy on a converged file (the usual yardstick)
#       gopve cold  – gopve_test with an empty cache every run (a transfer per task:
#                     what the content-hash cache saves)
#     each minus an empty play of the same shape, so SSH setup and fact-free
#     play start-up are not counted.
#  2. one module process, no Ansible around it: wall time and peak RSS of the
#     Go runtime validating and converging a file vs. Python's AnsibleModule
#     doing the same validation and file write (hack/bench_exec.py).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_TASKS:-20}
work=$(mktemp -d)
lab=/var/lib/gopve/bin/lab
labdir=
cleanup() {
  [ -n "$labdir" ] && "$lab" down --dir "$labdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "bench: building the test-tagged binary and the lab"
make -s build-test >/dev/null
bin=$(ls tests/integration/out/bin/gopve_linux_x86_64)
mkdir -p "$(dirname "$lab")"
CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab

# The collection as installed, plus the generated gopve_test plugins.
coll=$work/collections/ansible_collections/gopve/proxmox
mkdir -p "$coll/bin"
cp -r galaxy.yml meta plugins "$coll/"
cp "$bin" "$coll/bin/gopve_linux_x86_64"
"$bin" gen-plugins --out "$coll" --module gopve_test >/dev/null

labdir=$work/lab
"$lab" up --nodes 1 --pve 8 --dir "$labdir" >/dev/null
inv=$labdir/inventory.yml

play() { # play NAME TASK-YAML
  cat >"$work/$1.yml" <<PLAY
- hosts: pve01
  gather_facts: false
  tasks:
$2
PLAY
}
play empty "    - ansible.builtin.meta: noop
      loop: \"{{ range($N) | list }}\""
play warm "    - gopve.proxmox.gopve_test: {name: bench, path: /root/bench-go.txt, content: \"x\\n\"}
      loop: \"{{ range($N) | list }}\""
play copy "    - ansible.builtin.copy: {dest: /root/bench-py.txt, content: \"x\\n\"}
      loop: \"{{ range($N) | list }}\""
play cold "    - gopve.proxmox.gopve_test: {name: bench, path: /root/bench-go.txt, content: \"x\\n\"}
      vars: {gopve_remote_cache: \"/root/.bench-cache/{{ item }}\"}
      loop: \"{{ range($N) | list }}\""

export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 \
  ANSIBLE_RETRY_FILES_ENABLED=0 HOME=$work/home ANSIBLE_LOCAL_TEMP=$work/home/tmp
mkdir -p "$work/home"
run() { # seconds of one ansible-playbook run
  local t0 t1
  t0=$(date +%s.%N)
  ansible-playbook -i "$inv" "$work/$1.yml" >"$work/$1.log" 2>&1 || {
    cat "$work/$1.log" >&2; echo "bench: $1 failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
# Warm the cache and converge both files first, then interleave the
# measured runs so load changes hit every variant alike.
run warm >/dev/null; run copy >/dev/null
declare -A total=([empty]=0 [warm]=0 [copy]=0 [cold]=0)
rounds=${BENCH_ROUNDS:-3}
for r in $(seq "$rounds"); do
  "$lab" ssh --dir "$labdir" pve01 'rm -rf /root/.bench-cache' >/dev/null
  for v in empty warm copy cold; do
    total[$v]=$(echo "${total[$v]} + $(run $v)" | bc -l)
  done
done
per() { echo "(${total[$1]} - ${total[empty]}) / ($rounds * $N) * 1000" | bc -l; }
warm=$(per warm); copy=$(per copy); cold=$(per cold)
printf '\nper task over SSH (%d tasks x %d rounds, empty-play baseline subtracted)\n' "$N" "$rounds"
printf '  %-34s %8.1f ms\n' "gopve_test, cached binary" "$warm" "ansible.builtin.copy" "$copy" "gopve_test, binary sent every task" "$cold"
printf '  ratio gopve warm / python copy      %6.2f\n' "$(echo "$warm / $copy" | bc -l)"
printf '  ratio gopve cold / gopve warm       %6.2f   (what the cache saves)\n' "$(echo "$cold / $warm" | bc -l)"

echo
/usr/bin/python3 hack/bench_exec.py "$bin" "$work/exec"
