# shellcheck shell=bash
# What the benchmarks of `make bench` (hack/bench*.sh) share, sourced by each
# after its `cd` to the checkout's root: one place for the set-up and the
# measuring that must be done alike for figures to compare. Not a script of
# its own: it defines functions and runs nothing.
#
# A bench calls bench_init first; every other function reads what it set:
#   bench      the bench's name, the prefix of its messages
#   work       the run's scratch directory, removed on exit
#   lab        the lab binary, built per run into $work/bin/lab (not the
#              shared /var/lib/gopve/bin/lab: other checkouts build and run
#              that one, and could replace it between our build and our
#              `lab up`); `make lab-up` and hack/demo.sh build their own

# bench_init NAME: the scratch directory, the lab path and the exit trap
# that takes down every lab the bench started and removes the directory.
bench_init() {
  bench=$1
  work=$(mktemp -d)
  lab=$work/bin/lab
  bench_labs=()
  trap bench_cleanup EXIT
}

# bench_cleanup: the EXIT trap; every lab of bench_lab_up down, then $work
# (the lab binary is in it: labs first).
bench_cleanup() {
  local d
  for d in "${bench_labs[@]}"; do "$lab" down --dir "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}

# bench_build TARGET WHAT: `make TARGET` (build or build-test) and the lab
# binary, announced as "NAME: building WHAT and the lab"; sets bin to the
# gopve binary TARGET makes.
bench_build() {
  echo "$bench: building $2 and the lab"
  make -s "$1" >/dev/null
  case $1 in
    build) bin=$(ls bin/gopve_linux_x86_64) ;;
    build-test) bin=$(ls tests/integration/out/bin/gopve_linux_x86_64) ;;
  esac
  mkdir -p "$(dirname "$lab")"
  CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab
}

# bench_collection PATH…: the collection as Ansible finds it installed,
# $coll under $work/collections, with these files of the checkout in it
# (each bench copies what its plays use).
bench_collection() {
  coll=$work/collections/ansible_collections/gopve/proxmox
  mkdir -p "$coll"
  cp -r "$@" "$coll/"
}

# bench_lab_up DIR LAB-UP-ARGS…: a fresh lab in DIR, taken down on exit
# (registered before it starts: a lab that fails half-way is cleared too).
bench_lab_up() {
  local d=$1
  shift
  bench_labs+=("$d")
  "$lab" up --dir "$d" "$@" >/dev/null
}

# bench_ansible_env: Ansible for a bench run, its collection the one of
# bench_collection and its home and temp files in $work (nothing of the
# user's config, no colour codes in the logs that are grepped).
bench_ansible_env() {
  export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 \
    ANSIBLE_RETRY_FILES_ENABLED=0 HOME=$work/home ANSIBLE_LOCAL_TEMP=$work/home/tmp
  mkdir -p "$work/home"
}

# bench_play NAME TASK-YAML: $work/NAME.yml, one play on pve01 of the task
# looped N times (the per-task figures divide by N).
bench_play() {
  cat >"$work/$1.yml" <<PLAY
- hosts: pve01
  gather_facts: false
  tasks:
$2
      loop: "{{ range($N) | list }}"
PLAY
}

# bench_time NAME [ANSIBLE-PLAYBOOK-ARGS…]: seconds of one ansible-playbook
# run of $work/NAME.yml against $inv, its output in $work/NAME.log. A failed
# run prints its log and exits: a wrong result fails the bench.
# shellcheck disable=SC2154 # inv: the bench's inventory, set once its lab is up
bench_time() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  ansible-playbook -i "$inv" "$@" "$work/$name.yml" >"$work/$name.log" 2>&1 || {
    cat "$work/$name.log" >&2; echo "$bench: $name failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

# bench_rounds VARIANT…: R rounds, each one run of the empty play and of
# every variant in turn (the bench's run NAME prints seconds), so load
# changes on this shared machine hit them alike; sets ms[VARIANT] to the
# milliseconds per task, the empty play's time subtracted (SSH set-up and
# play start-up are not counted).
bench_rounds() {
  local v t
  declare -gA total=([empty]=0) ms=()
  for v in "$@"; do total[$v]=0; done
  for _ in $(seq "$R"); do
    for v in empty "$@"; do
      t=$(run "$v") # apart: a failed run must stop the bench (set -e)
      total[$v]=$(echo "${total[$v]} + $t" | bc -l)
    done
  done
  for v in "$@"; do
    ms[$v]=$(echo "(${total[$v]} - ${total[empty]}) / ($R * $N) * 1000" | bc -l)
  done
}

# bench_ratio A B: ms[A] / ms[B].
bench_ratio() { echo "${ms[$1]} / ${ms[$2]}" | bc -l; }

# bench_cached: the path the fast path caches $bin under on a node, to run
# it there without Ansible.
bench_cached() { echo "/root/.ansible/gopve/$(sha256sum "$bin" | cut -d' ' -f1)/gopve"; }

# bench_machine: this machine's cores and CPU model, for the line that
# says where the figures were taken.
bench_machine() { echo "$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"; }
