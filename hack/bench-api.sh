#!/usr/bin/env bash
# API module cost (issue 9), printed next to hack/bench.sh's figures:
#   - API requests per no-op pve_storage run, counted in the lab's request log
#     (the promise: at most two GETs, /version and /storage/{id});
#   - time per no-op pve_storage task vs an ansible.builtin.uri GET of the same
#     storage, both run N times on the node over real SSH, each minus an empty
#     play of the same shape. Printed as a ratio: the machine is shared and noisy.
# The uri task skips certificate checks (it cannot pin a fingerprint);
# pve_storage pins the node's certificate, as a user would. PVE 8 nodes:
# ansible-core 2.14's uri fails on Python 3.12+ (PVE 9's Debian 13:
# "HTTPSConnection.__init__() got an unexpected keyword argument 'cert_file'").
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

echo "bench-api: building gopve and the lab"
make -s build >/dev/null
bin=$(ls bin/gopve_linux_x86_64)
mkdir -p "$(dirname "$lab")"
CGO_ENABLED=0 go build -o "$lab" ./modules-src/cmd/lab

coll=$work/collections/ansible_collections/gopve/proxmox
mkdir -p "$coll/bin"
cp -r galaxy.yml meta plugins "$coll/"
cp "$bin" "$coll/bin/gopve_linux_x86_64"

labdir=$work/lab
"$lab" up --nodes 1 --pve 8 --dir "$labdir" >/dev/null
inv=$labdir/inventory.yml
creds=$labdir/credentials.yml
sock=$labdir/control.sock

play() { # play NAME TASK-YAML
  cat >"$work/$1.yml" <<PLAY
- hosts: pve01
  gather_facts: false
  tasks:
$2
PLAY
}
loop="      loop: \"{{ range($N) | list }}\"
      no_log: true"
play empty "    - ansible.builtin.meta: noop
      loop: \"{{ range($N) | list }}\""
play storage "    - gopve.proxmox.pve_storage:
        api_host: \"{{ ansible_host }}\"
        api_token_id: \"{{ pve_api_token_id }}\"
        api_token_secret: \"{{ pve_api_token_secret }}\"
        api_fingerprint: \"{{ pve_api_fingerprint }}\"
        storage: local
        type: dir
$loop"
play uri "    - ansible.builtin.uri:
        url: \"https://{{ ansible_host }}:8006/api2/json/storage/local\"
        headers: {Authorization: \"PVEAPIToken={{ pve_api_token_id }}={{ pve_api_token_secret }}\"}
        validate_certs: false
$loop"

run() { # run NAME → seconds
  local start end
  start=$(date +%s.%N)
  ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_NOCOLOR=1 HOME=$work \
    ansible-playbook -i "$inv" -e "@$creds" "$work/$1.yml" >"$work/$1.out" 2>&1 \
    || { cat "$work/$1.out" >&2; return 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

run storage >/dev/null # warm: binary cached on the node
curl -s --unix-socket "$sock" -X DELETE http://lab/v1/requests >/dev/null
t_storage=$(run storage) || exit 1
reqs=$(curl -s --unix-socket "$sock" http://lab/v1/requests | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r), sum(1 for x in r if x["method"] != "GET"))')
t_uri=$(run uri) || exit 1
t_empty=$(run empty) || exit 1

read -r total writes <<<"$reqs"
python3 - "$N" "$total" "$writes" "$t_storage" "$t_uri" "$t_empty" <<'PY'
import sys
n, total, writes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s, u, e = (float(x) for x in sys.argv[4:7])
ps, pu = (s - e) / n, (u - e) / n
print(f"pve_storage no-op: {total / n:.1f} API requests per run ({writes} writes in {n} runs)")
print(f"per task (minus an empty play): pve_storage {ps*1000:.0f} ms, ansible.builtin.uri GET {pu*1000:.0f} ms, ratio {ps/pu:.2f}")
PY
