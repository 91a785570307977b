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
# The -vvv run of the whole site also gives the converged cost per module:
# processes each module started on the nodes, API requests, HTTPS
# connections (gopve_cost, counted by the modules' host and pveapi layers),
# next to what the lab saw in that run (commands.log, request log).
#
# Per-phase wall times come from hack/bench/callback_plugins/phase_times.py
# (ansible-core 2.14 ships no timing callback). SSH commands: ' SSH: EXEC '
# lines of one -vvv run per variant.
#
# BENCH_SMOKE=1 (CI's bench smoke, tests/bench/run.sh) proves the bench
# runs and the site converges, without the seed roles: one fresh lab, the
# site's first run, then one -vvv run of site, its raw floor and the whole
# site on that lab (each must report changed=0), which also serve as the
# smoke's round. The seed roles' fresh-lab convergence (most of
# the bench's time) only runs in `make bench`.
#
# Every round runs on the lab with the Perl tools' start-up costs on and,
# unless BENCH_PERL_OFF=0, again with them off (see perl_costs).
# BENCH_SCALE=1 also starts a fresh 7-node lab and runs the site there with
# forks 10 (first run, then R converged runs), printed per phase next to the
# 3-node figures. BENCH_ROUNDS (3), BENCH_PVE (9).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/bench-lib.sh
. hack/bench-lib.sh
R=${BENCH_ROUNDS:-3}
SMOKE=${BENCH_SMOKE:-0}
PVE=${BENCH_PVE:-9}
repo=$PWD
bench_init bench-site
helper=(/usr/bin/python3 "$repo/hack/bench/site.py")

bench_build build gopve

# The collection as a user installs it: plugins, roles, playbooks, binary.
bench_collection galaxy.yml meta plugins roles playbooks bin

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
bench_ansible_env
export ANSIBLE_PIPELINING=True \
  ANSIBLE_CALLBACK_PLUGINS=$repo/hack/bench/callback_plugins ANSIBLE_CALLBACKS_ENABLED=phase_times \
  GOPVE_BENCH_PHASE_TAGS="$site_phases $seed_phases"
results=$work/results.jsonl
# Later phases (clone, ha) may need a template guest: hack/demo/guests.json
# when it exists, as the demo would start its lab.
guests=()
[ -f hack/demo/guests.json ] && guests=(--guests "$repo/hack/demo/guests.json")

lab_up() { # lab_up VAR NAME NODES: start a fresh lab, its directory in VAR
  local d=$work/$2
  # bench_lab_up here, not in a $(…) subshell: cleanup must see every lab
  bench_lab_up "$d" --nodes "$3" --pve "$PVE" "${guests[@]}"
  # The container phase's CT template (hack/demo/group_vars.yml's CT 200),
  # as hack/demo.sh leaves it: pct create fails without one, as on PVE.
  "$lab" ssh --dir "$d" pve01 \
    'head -c 65536 /dev/urandom > /var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst' </dev/null
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
  local name=$1 kind=$2 dir=$3 flags=() args=() more=() t0 t1
  shift 3
  read -ra more <<<"${extra_args[$name]:-}" # "--tags a,b": one argument a word
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift && args=("$@")
  [[ " ${flags[*]} " == *" --vvv "* ]] && args+=(-vvv)
  n=$((n + 1))
  local log=$work/run$n-$name-$kind.log
  t0=$(date +%s.%N)
  GOPVE_BENCH_PHASES=$work/run$n.json ansible-playbook -i "$dir/inventory.yml" \
    -e @"$repo/hack/demo/group_vars.yml" -e @"$dir/credentials.yml" \
    "${more[@]}" "${args[@]}" "${playbook[$name]}" >"$log" 2>&1 || true
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
# shellcheck disable=SC2154 # siteA is set by lab_up (printf -v)
run "$first" first "$siteA"
# The smoke's converged runs below (shape, -vvv, rounds) each must report
# changed=0 already: a second run of its own would prove nothing more.
[ "$SMOKE" = 1 ] || run "$first" second "$siteA" --converged

if [ "$SMOKE" = 1 ]; then
  echo "bench-site: smoke (BENCH_SMOKE=1): no seed roles; the converged rounds run on the site's own lab"
  lab3=$siteA
  # raw_site is shaped from the site's -vvv run below (the same tasks), and
  # those -vvv runs are the smoke's one round: no run of its own for either
  # (issue 27 §3, CI time; a smoke's figures are not for comparing).
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
# What a converged run costs the nodes, per module (issue 24 §3): the -vvv
# run of the whole site carries each task's gopve_cost (processes the
# module started, API requests, HTTPS connections: counted by its host and
# pveapi layers); around it, the lab's own witnesses: every node's
# commands.log (the PVE tool and zpool/zfs stand-ins that ran) and the
# simulator's request log. No extra run: the -vvv run is the SSH count's.
cost_of=site
[ ${#extra[@]} -gt 0 ] && cost_of=site_all
lab_logs_reset() {
  for node in pve01 pve02 pve03; do
    "$lab" ssh --dir "$lab3" "$node" ': > /var/lib/gopve-lab/commands.log' </dev/null
  done
  curl -s --unix-socket "$lab3/control.sock" -X DELETE http://lab/v1/requests >/dev/null
}
lab_logs_read() { # JSON: the stand-ins that ran, by name; the API requests the lab saw
  for node in pve01 pve02 pve03; do
    "$lab" ssh --dir "$lab3" "$node" 'cat /var/lib/gopve-lab/commands.log 2>/dev/null' </dev/null
  done >"$work/commands.log"
  curl -s --unix-socket "$lab3/control.sock" http://lab/v1/requests >"$work/requests.json"
  /usr/bin/python3 -c 'import collections, json, sys
tools = collections.Counter(json.loads(l)[0] for l in open(sys.argv[1]) if l.strip())
print(json.dumps({"tools": dict(tools), "requests": len(json.load(open(sys.argv[2])))}))' "$work/commands.log" "$work/requests.json"
}
if [ "$SMOKE" = 1 ]; then
  echo "bench-site: SSH commands and the smoke's one round (one -vvv run each) of: $variants"
else
  echo "bench-site: SSH commands (one -vvv run each), then $R interleaved rounds of: $variants"
fi
for v in $variants; do
  [ "$v" = "$cost_of" ] && lab_logs_reset
  run "$v" vvv "$lab3" --converged --vvv
  [ "$v" = "$cost_of" ] && lab_logs_read >"$work/lab-cost.json"
  if [ "$SMOKE" = 1 ] && [ "$v" = site ]; then
    "${helper[@]}" raw "$last_phases" pve "$work/raw_site.yml"
  fi
done
if [ "$SMOKE" = 1 ]; then
  # The smoke's round: its -vvv runs, recorded once more as a round.
  R=0
  # Through a file of its own: sed must not read the lines it appends.
  sed -n 's/"kind": "vvv"/"kind": "round"/p' "$results" >"$work/rounds.jsonl"
  cat "$work/rounds.jsonl" >>"$results"
fi
# Perl costs off (BENCH_PERL_OFF=1, the default): each round also runs the
# variants that start PVE tools with the lab's stand-ins at no start-up
# cost, as `lab up --perl-startup=false` makes them (node.json without
# perl_startup_ms, which every stand-in reads as it starts), so the same
# tables are printed both ways from one run. The raw plays start no tool:
# their Perl-on runs of the same rounds serve both tables.
perl_costs() { # perl_costs on|off: every node of lab3
  local keep=/var/lib/gopve-lab/node.json.perl-on
  for node in pve01 pve02 pve03; do
    if [ "$1" = off ]; then
      "$lab" ssh --dir "$lab3" "$node" "cp $nodejson $keep && python3 -c 'import json, os, sys
d = json.load(open(sys.argv[1])); d.pop(\"perl_startup_ms\", None)
json.dump(d, open(sys.argv[1] + \".tmp\", \"w\"), indent=2); os.replace(sys.argv[1] + \".tmp\", sys.argv[1])' $nodejson" </dev/null
    else
      "$lab" ssh --dir "$lab3" "$node" "mv $keep $nodejson" </dev/null
    fi
  done
}
nodejson=/etc/gopve-lab/node.json
perl_variants=$(for v in $variants; do [[ $v == raw_* ]] || echo "$v"; done | xargs)
for _ in $(seq "$R"); do
  for v in $variants; do run "$v" round "$lab3" --converged; done
  if [ "${BENCH_PERL_OFF:-1}" = 1 ]; then
    perl_costs off
    for v in $perl_variants; do run "$v" round-perl-off "$lab3" --converged; done
    perl_costs on
  fi
done

# 4. Scale: a fresh 7-node lab, forks 10.
if [ "${BENCH_SCALE:-0}" = 1 ]; then
  echo "bench-site: scale, fresh 7-node PVE $PVE lab, forks 10"
  "$lab" down --dir "$lab3" >/dev/null
  lab_up lab7 site7 7
  # shellcheck disable=SC2154 # lab7 is set by lab_up (printf -v)
  run "$first" scale-first "$lab7" -- --forks 10
  for _ in $(seq "$R"); do run "$first" scale-converged "$lab7" --converged -- --forks 10; done
fi

"${helper[@]}" report "$results" "$cost_of" "$work/lab-cost.json"
echo "(pipelining on; machine: $(bench_machine), shared; PVE $PVE lab; ratios from one run are what compare)"
