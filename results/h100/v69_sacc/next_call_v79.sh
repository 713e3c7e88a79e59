#!/usr/bin/env bash
# Session 42, one call: v79a_an64 (make_v79.py) against v76b_tma5d, then the receipts' seed check
# (results/h100/receipts/next_call_seed.sh, run after, its builds done here beside the others).
# Phase 1, in parallel: the harness builds (v76b + v79a; the seed script's three), probe76 bare on v76b and v79a and
# reg on v79a (probe76's lock times one at a time), compare53's two modules built. Phase 2, one at a time on the
# GPU: the harness run of v76b and v79a at every shape, the seed script, compare53 (accuracy) with what time is left.
# Before: python results/h100/v69_sacc/make_v79.py
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v79; mkdir -p $L $OUT/seed
T0=$(date +%s)
cp .gpu/v79a_an64.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; } > $L/env.txt 2>&1
sha256sum $P/v76b_tma5d.py $P/v79a_an64.py $R/probe76.py $R/make_v79.py .gpu/compare53.py > $L/sha256.txt
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $L/config.yaml
cands="$P/v76b_tma5d.py $P/v79a_an64.py"
( MAX_JOBS=4 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r79 \
    --config $L/config.yaml --build-only > $L/build.log 2>&1; mark "harness build-only rc=$?" ) &
# the seed script's config, so that its own build-only finds these builds
printf 'build:\n  cache_dir: /tmp/hbseed\n  time_limit_s: 900\ncheck:\n  static: warn\nevaluate:\n  time_limit_s: 60\ntiming:\n  budget_s: 0.2\n  warmup_ms: 5\n  min_iters: 5\nbaselines:\n  graph: false\n  compile: false\n' > /tmp/seedcfg.yaml
A=tests/adversarial; mkdir -p /tmp/cseed && cp $A/judge/cuda_reply_before_work.py $A/honest/cuda_basic.py $P/v76b_tma5d.py /tmp/cseed/
( MAX_JOBS=4 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --build-only --candidates /tmp/cseed \
    --config /tmp/seedcfg.yaml --results /tmp/rseed/build > $L/seed_prebuild.log 2>&1; mark "seed prebuild rc=$?" ) &
for job in v76b_tma5d:bare v79a_an64:bare v79a_an64:reg; do
  n=${job%%:*}; m=${job##*:}
  ( TORCH_EXTENSIONS_DIR=/tmp/ext79 timeout 240 python $R/probe76.py $P/$n.py --modes=$m > $L/probe_${n}_$m.log 2>&1
    mark "probe $n $m rc=$?" ) &
done
( TORCH_EXTENSIONS_DIR=/tmp/ext53 timeout 240 python -c "
import importlib.util, sys
for s in ('v76b_tma5d', 'v79a_an64'):
    spec = importlib.util.spec_from_file_location(s, '$P/' + s + '.py'); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
" > $L/compare_prebuild.log 2>&1; mark "compare53 prebuild rc=$?" ) &
wait
for f in $L/probe_*.log; do grep -v -i warn $f | grep -v "^ *$" | tail -18; done
left=$(( 560 - ($(date +%s) - T0) )); mark "harness run, $left s left"
timeout $(( left < 150 ? left : 150 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/r79 --config $L/config.yaml > $L/harness.log 2>&1
mark "harness rc=$?"
tail -14 $L/harness.log
cp -r /tmp/r79/scalar_gated_delta $L/records 2>/dev/null
left=$(( 560 - ($(date +%s) - T0) )); mark "seed script, $left s left"
OUT=$OUT/seed timeout $(( left < 230 ? left : 230 )) bash results/h100/receipts/next_call_seed.sh > $L/seed_script.log 2>&1
mark "seed script rc=$?"
left=$(( 570 - ($(date +%s) - T0) )); mark "compare53, $left s left"
TORCH_EXTENSIONS_DIR=/tmp/ext53 timeout $left python .gpu/compare53.py v79a_an64 v76b_tma5d > $L/compare53.log 2>&1
mark "compare53 rc=$?"
tail -30 $L/compare53.log
