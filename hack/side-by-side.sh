#!/usr/bin/env bash
# side-by-side.sh SCRIPT...: runs the test scripts at once, each with its
# own log, then prints each log in the order given with its time and exit
# status; exits 1 when any failed. For suites that spend much of their time
# waiting (lab task clocks, the Perl tools' start-up costs, HA rounds): one
# after another they left a third of CI's two cores idle (vmstat, 2026-12-05).
# Each script keeps its own labs, work directory and lab binary; what they
# share (bin/, the test binary) is built by the caller first, so their own
# `make -s build` finds it up to date.
set -uo pipefail
logs=$(mktemp -d)
pids=() starts=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM
for s in "$@"; do
  log="$logs/$(echo "$s" | tr / _).log"
  starts+=("$(date +%s)")
  { "$s" >"$log" 2>&1; echo "$? $(date +%s)" >"$log.rc"; } &
  pids+=($!)
done
wait "${pids[@]}"
pids=()
failed=0 n=0
for s in "$@"; do
  log="$logs/$(echo "$s" | tr / _).log"
  echo "== $s"
  cat "$log"
  read -r rc end <"$log.rc" || { rc=1 end=$(date +%s); }
  echo "== $s: exit $rc after $((end - starts[n])) s (run side by side with the others)"
  [ "$rc" = 0 ] || failed=1
  n=$((n + 1))
done
exit "$failed"
