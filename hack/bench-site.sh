#!/usr/bin/env bash
# The converged site next to what users run today (issue 19), measured side
# by side in one run on a 3-node lab over real SSH, rounds interleaved so load
# changes hit every variant alike (the machine is shared and noisy: only
# figures taken together compare). It reports; it fails only on a wrong result
# (a failed run, or a change on a converged lab), never on timings.
#
#   site      gopve.proxmox.site, the phases the seed roles also cover
#             (--tags); every phase of playbooks/site.yml is picked up from
#             its import_playbook tags, and when it has phases the seed roles
#             lack (clone, ha) the whole site is a row of its own (site_all)
#   seed      hack/bench/seed: seed 000's hand-written roles, reconstructed
#             (copy/lineinfile/apt/systemd, command/shell calling pvecm, pvesm,
#             zpool, zfs behind when: guards)
#   raw_site  one play per phase with as many `raw: true` tasks as the site
#             run started (the SSH floor for the same task count)
#   raw_seed  the same for the seed roles' task count
#
# Fairness first: on a fresh lab the seed roles run until they report
# changed=0 (the seed's own method; the runs it took are printed), then
# gopve.proxmox.site --check says what it still finds to change on that lab
# (printed: it should be nothing, or representation only), then the real
# site run, then every timed run must report changed=0. The site's own first
# run is timed on a second fresh lab.
#
# Per-phase wall times come from hack/bench/callback_plugins/phase_times.py
# (ansible-core 2.14 ships no timing callback). SSH commands: ' SSH: EXEC '
# lines of one -vvv run per variant.
#
# BENCH_SMOKE=1 (CI's bench smoke, tests/bench/run.sh) proves the bench
# runs and the site converges, without the seed roles: one fresh lab, the
# site's first and second runs, then the converged rounds of site and its
# raw floor on that lab. The seed roles' fresh-lab convergence (most of
# the bench's time) only runs in `make bench`.
#
# BENCH_SCALE=1 also starts a fresh 7-node lab and runs the site there with
# forks 10 (first run, then R converged runs), printed per phase next to the
# 3-node figures. BENCH_ROUNDS (3), BENCH_PVE (9).
set -euo pipefail
cd "$(dirname "$0")/.."
R=${BENCH_ROUNDS:-3}
SMOKE=${BENCH_SMOKE:-0}
PVE=${BENCH_PVE:-9}
repo=$PWD
work=$(mktemp -d)
lab=$work/bin/lab # not the shared /var/lib/gopve/bin/lab: other checkouts use it
labs=()
cleanup() {
  for d in "${labs[@]}"; do "$lab" down --dir "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
helper=(/usr/bin/python3 "$repo/hack/bench/site.py")

echo "bench-site: building gopve and the lab"
make -s build >/dev/null
mkdir -p "$(dirname "$lab")"
CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab

# The collection as a user installs it: plugins, roles, playbooks, binary.
coll=$work/collections/ansible_collections/gopve/proxmox
mkdir -p "$coll"
cp -r galaxy.yml meta plugins roles playbooks bin "$coll/"

# Phases: the tags of playbooks/site.yml's import_playbook entries, in order;
# the seed reconstruction's play tags.
tags_of() {
  /usr/bin/python3 -c 'import sys, yaml
for e in yaml.safe_load(open(sys.argv[1])) or []:
    if e.get("tags"): print(e["tags"][0])' "$1"
}
site_phases=$(tags_of playbooks/site.yml | xargs)
seed_phases=$(tags_of hack/bench/seed/site.yml | xargs)
common=() extra=()
for p in $site_phases; do
  if [[ " $seed_phases " == *" $p "* ]]; then common+=("$p"); else extra+=("$p"); fi
done
echo "bench-site: site phases: $site_phases (seed roles cover: ${common[*]})"

# Pipelining on for every variant, as the seed's ansible.cfg has it (its
# ssh_args, ControlMaster/ControlPersist 60s, are Ansible's defaults).
export ANSIBLE_PIPELINING=True ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
  HOME=$work/home ANSIBLE_LOCAL_TEMP=$work/home/tmp  \
  ANSIBLE_CALLBACK_PLUGINS=$repo/hack/bench/callback_plugins ANSIBLE_CALLBACKS_ENABLED=phase_times \
  GOPVE_BENCH_PHASE_TAGS="$site_phases $seed_phases"
mkdir -p "$work/home"
results=$work/results.jsonl
# Later phases (clone, ha) may need a template guest: hack/demo/guests.json
# when it exists, as the demo would start its lab.
guests=()
[ -f hack/demo/guests.json ] && guests=(--guests "$repo/hack/demo/guests.json")

lab_up() { # lab_up VAR NAME NODES: start a fresh lab, its directory in VAR
  local d=$work/$2
  labs+=("$d") # here, not in a $(…) subshell: cleanup must see every lab
  "$lab" up --nodes "$3" --pve "$PVE" --dir "$d" "${guests[@]}" >/dev/null
  printf -v "$1" %s "$d"
}
declare -A playbook=(
  [site]=gopve.proxmox.site [site_all]=gopve.proxmox.site
  [seed]=$repo/hack/bench/seed/site.yml
  [raw_site]=$work/raw_site.yml [raw_seed]=$work/raw_seed.yml
)
declare -A extra_args=([site]="--tags $(
  IFS=,
  echo "${common[*]}"
)")
n=0
run() { # run NAME KIND LABDIR [record flags] [-- ansible-playbook args]
  local name=$1 kind=$2 dir=$3 flags=() args=() t0 t1
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift && args=("$@")
  [[ " ${flags[*]} " == *" --vvv "* ]] && args+=(-vvv)
  n=$((n + 1))
  local log=$work/run$n-$name-$kind.log
  t0=$(date +%s.%N)
  GOPVE_BENCH_PHASES=$work/run$n.json ansible-playbook -i "$dir/inventory.yml" \
    -e @"$repo/hack/demo/group_vars.yml" -e @"$dir/credentials.yml" \
    ${extra_args[$name]:-} "${args[@]}" "${playbook[$name]}" >"$log" 2>&1 || true
  t1=$(date +%s.%N)
  [ -f "$work/run$n.json" ] || echo '[]' >"$work/run$n.json"
  "${helper[@]}" record "$results" "$name" "$kind" "$(echo "$t1 - $t0" | bc -l)" \
    "$work/run$n.json" "$log" "${flags[@]}" || { tail -30 "$log" >&2; exit 1; }
  last_phases=$work/run$n.json
}

# 1. The site's first run, on a fresh lab of its own; the second must be clean.
echo "bench-site: fresh 3-node PVE $PVE lab, gopve.proxmox.site first run"
lab_up siteA site3 3
[ ${#extra[@]} -gt 0 ] && first=site_all || first=site
run "$first" first "$siteA"
run "$first" second "$siteA" --converged

if [ "$SMOKE" = 1 ]; then
  echo "bench-site: smoke (BENCH_SMOKE=1): no seed roles; the converged rounds run on the site's own lab"
  lab3=$siteA
  run site shape "$lab3" --converged
  "${helper[@]}" raw "$last_phases" pve "$work/raw_site.yml"
  variants="site raw_site"
else
"$lab" down --dir "$siteA" >/dev/null

# 2. The seed roles on another fresh lab, until changed=0 (at most 4 runs).
echo "bench-site: fresh 3-node PVE $PVE lab, seed roles until changed=0"
lab_up lab3 seed3 3
run seed first "$lab3"
for i in 2 3 4; do
  run seed until-converged "$lab3"
  if tail -1 "$results" | grep -q '"changed": \[\]'; then
    # the clean run is not an "until" run: record it as converged instead
    sed -i '$d' "$results"
    break
  fi
  [ "$i" = 4 ] && { echo "bench-site: the seed roles still change something after 4 runs" >&2; exit 1; }
done
run site check-after-seed "$lab3" -- --check --diff
run "$first" converge-after-seed "$lab3"
run "$first" second "$lab3" --converged
run seed converged "$lab3" --converged

# 3. The raw plays, shaped from one converged run of each.
run site shape "$lab3" --converged
"${helper[@]}" raw "$last_phases" pve "$work/raw_site.yml"
run seed shape "$lab3" --converged
"${helper[@]}" raw "$last_phases" pve "$work/raw_seed.yml"

variants="site seed raw_site raw_seed"
fi
[ ${#extra[@]} -gt 0 ] && variants="$variants site_all"
echo "bench-site: SSH commands (one -vvv run each), then $R interleaved rounds of: $variants"
for v in $variants; do run "$v" vvv "$lab3" --converged --vvv; done
for _ in $(seq "$R"); do
  for v in $variants; do run "$v" round "$lab3" --converged; done
done

# The converged cluster phase's cost on the nodes (issue 24 §3): PVE tool
# processes started (every stand-in's commands.log, on every node) and API
# requests (the lab's request log) of one converged `--tags cluster` run.
# A converged member proves itself from /etc/pve/.members: both are 0.
for node in pve01 pve02 pve03; do
  "$lab" ssh --dir "$lab3" "$node" ': > /var/lib/gopve-lab/commands.log' </dev/null
done
curl -s --unix-socket "$lab3/control.sock" -X DELETE http://lab/v1/requests >/dev/null
ansible-playbook -i "$lab3/inventory.yml" -e @"$repo/hack/demo/group_vars.yml" -e @"$lab3/credentials.yml" \
  --tags cluster gopve.proxmox.site >"$work/cluster-cost.log" 2>&1 || { tail -30 "$work/cluster-cost.log" >&2; exit 1; }
tools=0
for node in pve01 pve02 pve03; do
  n=$("$lab" ssh --dir "$lab3" "$node" 'cat /var/lib/gopve-lab/commands.log 2>/dev/null | wc -l' </dev/null)
  tools=$((tools + n))
done
reqs=$(curl -s --unix-socket "$lab3/control.sock" http://lab/v1/requests | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
cluster_tasks=$(grep -cE '^(ok|changed): \[pve0[0-9]\]' "$work/cluster-cost.log" || true)
cluster_cost="converged cluster phase (--tags cluster, $cluster_tasks task results): $tools PVE tool processes on the nodes, $reqs API requests"

# 4. Scale: a fresh 7-node lab, forks 10.
if [ "${BENCH_SCALE:-0}" = 1 ]; then
  echo "bench-site: scale, fresh 7-node PVE $PVE lab, forks 10"
  "$lab" down --dir "$lab3" >/dev/null
  lab_up lab7 site7 7
  run "$first" scale-first "$lab7" -- --forks 10
  for _ in $(seq "$R"); do run "$first" scale-converged "$lab7" --converged -- --forks 10; done
fi

"${helper[@]}" report "$results"
echo "$cluster_cost"
echo "(pipelining on; machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), shared; PVE $PVE lab; ratios from one run are what compare)"
