#!/usr/bin/env bash
# The benchmarks in CI (issue 19): every script of `make bench` runs once,
# one round each, so CI proves each one still runs end to end and that its
# result checks hold — a bench fails only on a wrong result (a failed run, a
# change on a converged lab, an artifact over its size budget is reported),
# never on timings. One round on a loaded CI machine makes no figure worth
# comparing: the README's table comes from a full `make bench`.
# Needs root (the labs). `make test` runs it last.
set -euo pipefail
cd "$(dirname "$0")/../.."
# BENCH_SMOKE: bench-site leaves the seed roles' fresh-lab convergence to
# `make bench` (most of its time, and no result check of ours depends on it).
# BENCH_PERL_OFF=0: bench-site's rounds with the Perl tools' costs off are make bench's, not CI's.
export BENCH_ROUNDS=${BENCH_ROUNDS:-1} BENCH_TASKS=${BENCH_TASKS:-3} BENCH_SMOKE=${BENCH_SMOKE:-1} BENCH_PERL_OFF=${BENCH_PERL_OFF:-0}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for b in bench bench-size bench-local bench-clone bench-site; do
  start=$(date +%s)
  if ! "./hack/$b.sh" >"$out/$b.log" 2>&1; then
    cat "$out/$b.log" >&2
    echo "bench smoke: hack/$b.sh failed (above)" >&2
    exit 1
  fi
  echo "bench smoke: hack/$b.sh ran in $(($(date +%s) - start)) s (BENCH_ROUNDS=$BENCH_ROUNDS)"
done
