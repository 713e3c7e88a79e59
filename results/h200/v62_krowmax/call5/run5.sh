#!/usr/bin/env bash
# Session 26, call 5: probe56 (with the load warp's cp.async issue marked) on v56_kuni and v62_krowmax.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
sha256sum $P/v56_kuni.py $P/v62_krowmax.py .gpu/probe56.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext62
for n in v56_kuni v62_krowmax; do
  ( timeout 300 python .gpu/probe56.py $P/$n.py > $R/probe56_$n.log 2>&1; echo "probe56 $n rc=$?" >> $R/timeline.txt ) &
done
wait
cat $R/timeline.txt
for n in v56_kuni v62_krowmax; do grep -v Warning $R/probe56_$n.log | head -17; done
tar czf $OUT/r5.tgz -C $OUT r5
