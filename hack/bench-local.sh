#!/usr/bin/env bash
# Local mode's cost (issue 16), measured side by side in one run against a
# 1-node lab over real SSH: ms per no-op pve_storage task (storage local,
# converged, so each task is its two GETs) for
#   ticket   on the node, no api_host: a root@pam ticket minted with the
#            node's /etc/pve/priv/authkey.key as PVE's Perl signs it (SHA-1,
#            PKCS#1 v1.5), HTTPS to its own pveproxy
#   pvesh    the same task with the auth key moved aside (untimed, between
#            plays), so local mode falls back to pvesh: one pvesh process
#            per API call, each paying the stand-in's start-up delay
#            (modules-src/lab/tools/pvesh DefaultStartup, 0.5 s: issue 16's
#            figure for real pvesh, a reconstruction)
#   api_host the task delegated to the controller, api_host + token
# each minus an empty play of the same shape, R rounds with the variants
# interleaved (the machine is shared and noisy: only figures taken together
# compare), printed with ratios to the ticket.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/bench-lib.sh
. hack/bench-lib.sh
N=${BENCH_TASKS:-10}
R=${BENCH_ROUNDS:-3}
bench_init bench-local
bench_build build gopve

bench_collection galaxy.yml meta plugins
mkdir -p "$coll/bin"
cp "$bin" "$coll/bin/gopve_linux_x86_64"

labdir=$work/lab
bench_lab_up "$labdir" --nodes 1 --pve 8
inv=$labdir/inventory.yml
creds=$labdir/credentials.yml

task='    - gopve.proxmox.pve_storage: {storage: local, type: dir}'
bench_play empty '    - ansible.builtin.meta: noop'
bench_play ticket "$task"
cp "$work/ticket.yml" "$work/pvesh.yml"
bench_play api_host "    - gopve.proxmox.pve_storage:
        api_host: \"{{ ansible_host }}\"
        api_token_id: \"{{ pve_api_token_id }}\"
        api_token_secret: \"{{ pve_api_token_secret }}\"
        api_fingerprint: \"{{ pve_api_fingerprint }}\"
        storage: local
        type: dir
      delegate_to: localhost
      no_log: true"

bench_ansible_env
key=/etc/pve/priv/authkey.key
node() { "$lab" ssh --dir "$labdir" pve01 "$1" >/dev/null; }
run() { # run NAME: seconds of one ansible-playbook run
  local t
  [ "$1" = pvesh ] && node "mv $key $key.away"
  t=$(bench_time "$1" -e "@$creds") || { [ "$1" = pvesh ] && node "mv $key.away $key"; exit 1; }
  [ "$1" = pvesh ] && node "mv $key.away $key"
  echo "$t"
}
variants="ticket pvesh api_host"
for v in $variants; do run "$v" >/dev/null; done # warm: binary cached on the node
# Each variant must be what it claims: the fallback warns, the others don't.
grep -q 'local mode uses pvesh' "$work/pvesh.log" || { echo "bench-local: the pvesh variant did not fall back to pvesh" >&2; exit 1; }
! grep -q 'local mode uses pvesh' "$work/ticket.log" || { echo "bench-local: the ticket variant fell back to pvesh:" >&2; grep 'local mode uses pvesh' "$work/ticket.log" >&2; exit 1; }
! grep -q 'accepted one signed SHA-256' "$work/ticket.log" || { echo "bench-local: the ticket variant needed the second form (the lab signs as PVE's Perl):" >&2; grep 'accepted one signed' "$work/ticket.log" >&2; exit 1; }
grep -q 'changed=0' "$work/ticket.log" || { echo "bench-local: the task is not a no-op" >&2; exit 1; }

# shellcheck disable=SC2086 # variants: one name a word
bench_rounds $variants

printf '\nlocal mode: per no-op pve_storage task (%d tasks x %d rounds, empty-play baseline subtracted)\n' "$N" "$R"
label() {
  case $1 in
    ticket) echo "local, minted ticket (HTTPS to own pveproxy)" ;;
    pvesh) echo "local, pvesh fallback (auth key unreadable)" ;;
    api_host) echo "api_host + token, from the controller" ;;
  esac
}
printf '  %-48s %9s %9s\n' "" "ms/task" "x ticket"
for v in $variants; do
  printf '  %-48s %9.1f %9.2f\n' "$(label "$v")" "${ms[$v]}" "$(bench_ratio "$v" ticket)"
done

# The minted-ticket task on the node alone, no Ansible or SSH around it
# (the cached binary, args on stdin, as the fast path runs it), at -vvv so
# its result carries gopve_cost: what the task started and sent, counted by
# its host and pveapi layers (issue 24 §3: one HTTPS connection for every
# call of a task).
cached=$(bench_cached)
node=$("$lab" ssh --dir "$labdir" pve01 "python3 -c '
import json, statistics, subprocess, time
args = json.dumps({\"_gopve_module\": \"pve_storage\", \"storage\": \"local\", \"type\": \"dir\", \"_ansible_verbosity\": 3}).encode()
times = []
for _ in range(10):
    t = time.perf_counter()
    out = json.loads(subprocess.run([\"$cached\", \"-\"], input=args, capture_output=True, check=True).stdout)
    times.append(time.perf_counter() - t)
    assert out[\"changed\"] is False and not out.get(\"warnings\"), out
c = out[\"gopve_cost\"]
print(statistics.median(times) * 1000, c[\"processes\"], c[\"api_requests\"], c[\"connections\"])
'")
read -r node_ms procs reqs conns <<<"$node"
printf '  %-48s %9.1f ms (median of 10; %d processes, %d API requests over %d HTTPS connection(s))\n' \
  "one minted-ticket task on the node, no Ansible" "$node_ms" "$procs" "$reqs" "$conns"
