#!/usr/bin/env bash
# Session 42, the fourth call: the third call's harness run read v79b_gblate at 455 us at large, v79a 478 and v76b 489
# (one H100), where probe76 read v79b's chunk within 0.5% of v79a's. Two more harness runs of the three on one
# machine (each with --fresh: every record new) say whether the harness's gap holds from run to run.
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
L=$OUT/v79d; mkdir -p $L
snap() { tar czf $OUT/v79d.tgz.tmp -C $OUT v79d && mv $OUT/v79d.tgz.tmp $OUT/v79d.tgz; }
trap 'snap; rm -rf $L' EXIT
T0=$(date +%s)
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
cp .gpu/v79a_an64.py .gpu/v79b_gblate.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; } > $L/env.txt 2>&1
sha256sum $P/v76b_tma5d.py $P/v79a_an64.py $P/v79b_gblate.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n  cache_dir: /tmp/hb79d\n' > $L/config.yaml
cands="$P/v76b_tma5d.py $P/v79a_an64.py $P/v79b_gblate.py"
MAX_JOBS=6 timeout 150 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r79d/build \
    --config $L/config.yaml --build-only > $L/build.log 2>&1; mark "harness build-only rc=$?"
for run in 1 2; do
  left=$(( 450 - ($(date +%s) - T0) ))
  timeout $(( left < 150 ? left : 150 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
    --results /tmp/r79d/run$run --config $L/config.yaml --fresh > $L/harness$run.log 2>&1
  mark "harness run $run rc=$?"
  tail -8 $L/harness$run.log | head -5
  cp -r /tmp/r79d/run$run/scalar_gated_delta $L/records$run 2>/dev/null
  snap
done
