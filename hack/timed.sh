#!/usr/bin/env bash
# timed.sh NAME CMD...: runs CMD and then prints one line saying how long it
# took and what it cost the machine: its wall time and the CPU time (user
# and system) of CMD and every process it waited for. A CI log thus says
# where its minutes went and which part is CPU, which waiting (issue 27 §3).
# The exit status is CMD's.
name=$1
shift
TIMEFORMAT="time: $name: %0R s wall, %0U s user + %0S s sys"
time "$@"
