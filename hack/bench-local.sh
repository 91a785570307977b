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
#   api_node the same api_host + token task on the node (the
#            certificate pinned, as a user would)
#   uri      ansible.builtin.uri GET of the same storage on the node, the
#            token in a header: Ansible's own way to read it (certificate
#            checks off: it cannot pin a fingerprint; PVE 8 nodes, as
#            ansible-core 2.14's uri fails on Python 3.12+, PVE 9's
#            Debian 13: "HTTPSConnection.__init__() got an unexpected
#            keyword argument 'cert_file'")
# each minus an empty play of the same shape, R rounds with the variants
# interleaved (the machine is shared and noisy: only figures taken together
# compare), printed with ratios to the ticket, and pve_storage on the node
# next to the uri GET. One warm run of api_node is counted in the lab's
# request log: API requests per no-op run (the promise, issue 9: at most
# two GETs, /version and /storage/{id}); a write there fails the bench.
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
api='        api_host: "{{ ansible_host }}"
        api_token_id: "{{ pve_api_token_id }}"
        api_token_secret: "{{ pve_api_token_secret }}"'
bench_play api_host "    - gopve.proxmox.pve_storage:
$api
        api_fingerprint: \"{{ pve_api_fingerprint }}\"
        storage: local
        type: dir
      delegate_to: localhost
      no_log: true"
bench_play api_node "    - gopve.proxmox.pve_storage:
$api
        api_fingerprint: \"{{ pve_api_fingerprint }}\"
        storage: local
        type: dir
      no_log: true"
bench_play uri "    - ansible.builtin.uri:
        url: \"https://{{ ansible_host }}:8006/api2/json/storage/local\"
        headers: {Authorization: \"PVEAPIToken={{ pve_api_token_id }}={{ pve_api_token_secret }}\"}
        validate_certs: false
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
requests() { curl -s --unix-socket "$labdir/control.sock" "$@" http://lab/v1/requests; }
variants="ticket pvesh api_host api_node uri"
# Warm: binary cached on the node (ticket's run caches it for the rest).
# api_node's warm run is also the one counted in the lab's request log: N
# no-op runs of the module, a warm one like any timed run.
for v in $variants; do
  if [ "$v" != api_node ]; then run "$v" >/dev/null; continue; fi
  requests -X DELETE >/dev/null
  run "$v" >/dev/null
  read -r api_reqs api_writes < <(requests | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(len(r), sum(1 for x in r if x["method"] != "GET"))')
done
# Each variant must be what it claims: the fallback warns, the others don't.
grep -q 'local mode uses pvesh' "$work/pvesh.log" || { echo "bench-local: the pvesh variant did not fall back to pvesh" >&2; exit 1; }
! grep -q 'local mode uses pvesh' "$work/ticket.log" || { echo "bench-local: the ticket variant fell back to pvesh:" >&2; grep 'local mode uses pvesh' "$work/ticket.log" >&2; exit 1; }
! grep -q 'accepted one signed SHA-256' "$work/ticket.log" || { echo "bench-local: the ticket variant needed the second form (the lab signs as PVE's Perl):" >&2; grep 'accepted one signed' "$work/ticket.log" >&2; exit 1; }
grep -q 'changed=0' "$work/ticket.log" || { echo "bench-local: the task is not a no-op" >&2; exit 1; }
[ "$api_writes" = 0 ] || { echo "bench-local: the no-op api_node runs wrote to the API ($api_writes requests other than GET)" >&2; exit 1; }

# shellcheck disable=SC2086 # variants: one name a word
bench_rounds $variants

printf '\nlocal mode: per no-op pve_storage task (%d tasks x %d rounds, empty-play baseline subtracted)\n' "$N" "$R"
label() {
  case $1 in
    ticket) echo "local, minted ticket (HTTPS to own pveproxy)" ;;
    pvesh) echo "local, pvesh fallback (auth key unreadable)" ;;
    api_host) echo "api_host + token, from the controller" ;;
    api_node) echo "api_host + token, on the node" ;;
    uri) echo "ansible.builtin.uri GET, on the node" ;;
  esac
}
printf '  %-48s %9s %9s\n' "" "ms/task" "x ticket"
for v in $variants; do
  printf '  %-48s %9.1f %9.2f\n' "$(label "$v")" "${ms[$v]}" "$(bench_ratio "$v" ticket)"
done
printf '  ratio pve_storage api_host on the node / uri GET %6.2f (both over SSH on the node, minus the empty play)\n' "$(bench_ratio api_node uri)"
printf '  pve_storage no-op, api_host + token: %.1f API requests per run in the lab request log (%d writes in %d runs)\n' \
  "$(echo "$api_reqs / $N" | bc -l)" "$api_writes" "$N"

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
