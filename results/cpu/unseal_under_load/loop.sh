#!/usr/bin/env bash
# Runs FIRST..LAST of one.sh, each beside two hog.py processes (memory-bound, one thread each) on the 2 cores;
# the instrumented sandbox (instrument.diff) leaves one line per burst in /dev/shm, copied to bl_L<k>/.
for k in $(seq ${FIRST:-1} ${LAST:-5}); do
  rm -f /dev/shm/burstlog_*
  for i in 1 2; do ${PY:-/work/main/.venv/bin/python} /tmp/flake/hog.py 45 & done; sleep 1
  REPO=${REPO:-/tmp/flake/repo} /tmp/flake/one.sh L$k > /tmp/flake/L$k.out
  python3 /tmp/flake/show.py /tmp/flake/res_L$k/4_SumReduction/records.jsonl >> /tmp/flake/L$k.out
  wait
  mkdir -p /tmp/flake/bl_L$k; cp /dev/shm/burstlog_* /tmp/flake/bl_L$k/
  head -1 /tmp/flake/L$k.out
done
