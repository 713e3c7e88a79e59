#!/usr/bin/env bash
# Session 34, written for the next call (no device time was left to run it): probe74 --lean on v69_sacc and v74_async at large (builds in parallel, runs one at a time).
# Before it: python results/h100/v69_sacc/make_v74.py (writes .gpu/v74_async.py); cp results/h100/v69_sacc/probe74.py .gpu/
set -u
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/ext74
P=candidates/scalar_gated_delta
sha256sum $P/v69_sacc.py .gpu/v74_async.py .gpu/probe74.py > $OUT/sha256.txt
nvidia-smi -L > $OUT/env.txt 2>&1
T0=$(date +%s)
for f in $P/v69_sacc.py .gpu/v74_async.py; do
  ( timeout 150 python .gpu/probe74.py $f --lean > $OUT/probe74_$(basename $f .py).log 2>&1; echo "$f rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/timeline.txt ) &
done
wait
cat $OUT/timeline.txt; for f in $OUT/probe74_*.log; do grep -v Warn $f | tail -18; done
