#!/usr/bin/env bash
# Session 24, call 1: v53_f16 (v52_sep with Q S0 and K^T Vt on fp16 wgmma at D = 128, each operand in two fp16
# pieces under a power-of-two scale per row or column) against v52_sep and a float64 recurrence (compare53.py:
# D = 128 shapes, scaled and spread inputs, safe-path gates; graph replay at large), then one harness run of both
# files (builds before timing).
# Before the call: python .gpu/make_v53.py; cp .gpu/v53_f16.py candidates/scalar_gated_delta/; compare53.py in .gpu/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v52_sep.py $P/v53_f16.py"
sha256sum $FILES .gpu/compare53.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext53
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
cands=""
timeout 200 python .gpu/compare53.py v53_f16 > $R/compare_v53_f16.log 2>&1; rc=$?
echo "compare v53_f16 rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|FAIL' $R/compare_v53_f16.log | head -20
if [ $rc -eq 0 ]; then cands="$P/v53_f16.py"; fi
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
[ -z "$cands" ] && { echo "compare failed: no harness run" | tee -a $R/timeline.txt; exit 1; }
left=$(( ${LIMIT:-520} - ($(date +%s) - T0) ))
echo "harness with v52 $cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v52_sep.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
snap
