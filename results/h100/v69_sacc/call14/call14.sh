#!/usr/bin/env bash
# Session 36, call 14: probe76 (does probe74 time the kernel it probes?) on v69_sacc and v74_async at large: plain,
# bare, lean, after and reg builds, all compiled in parallel, timed one at a time (a lock in probe76).
set -u
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/ext76
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
mkdir -p $OUT/logs
sha256sum $P/v69_sacc.py .gpu/v74_async.py $R/probe76.py > $OUT/sha256.txt
nvidia-smi > $OUT/env.txt 2>&1; python -c "import torch; print(torch.__version__, torch.version.cuda)" >> $OUT/env.txt
T0=$(date +%s)
for f in $P/v69_sacc.py .gpu/v74_async.py; do
  for m in plain bare lean after reg; do
    ( timeout 400 python $R/probe76.py $f --modes=$m > $OUT/logs/$(basename $f .py)_$m.log 2>&1
      echo "$(basename $f .py) $m rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/timeline.txt ) &
  done
done
wait
cat $OUT/timeline.txt
for f in v69_sacc v74_async; do for m in plain bare lean after reg; do grep -v -i warn $OUT/logs/${f}_$m.log | tail -18; done; done
cp $R/probe76_*.py $OUT/ 2>/dev/null; true
