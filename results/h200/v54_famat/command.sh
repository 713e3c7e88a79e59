#!/usr/bin/env bash
# Session 24, call 3: v54_famat (v53 with A = Q K^T on the first prep warpgroup's fp16 wgmma from pieces split first)
# against v52_sep and the float64 recurrence (compare53.py), graph replay at large (v52, v53, v54), probe54 on v54,
# cvtbench (the conversion instructions' issue cost), then one harness run of v52 and v54 (builds before timing).
# Before the call: python .gpu/mk54block.py; python .gpu/make_v54.py; cp .gpu/v54_famat.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
snap() { tar czf $OUT/r3.tgz.tmp -C $OUT r3 && mv $OUT/r3.tgz.tmp $OUT/r3.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v52_sep.py $P/v53_f16.py $P/v54_famat.py"
sha256sum $FILES .gpu/probe54.py .gpu/time53.py .gpu/compare53.py .gpu/cvtbench.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext54
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
( timeout 200 python .gpu/cvtbench.py > $R/cvtbench.log 2>&1; echo "cvtbench rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
( timeout 240 python .gpu/probe54.py $P/v54_famat.py > $R/probe54.log 2>&1; echo "probe54 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
wait
echo "builds, probe, bench done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -il 'error' $R/build_* | head
cands=""
timeout 200 python .gpu/compare53.py v54_famat > $R/compare_v54_famat.log 2>&1; rc=$?
echo "compare v54_famat rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|FAIL' $R/compare_v54_famat.log | head -20
if [ $rc -eq 0 ]; then cands="$P/v54_famat.py"; fi
timeout 100 python .gpu/time53.py $FILES > $R/time53.log 2>&1
cat $R/time53.log; cat $R/cvtbench.log | grep -v Warn; grep -v Warning $R/probe54.log | head -30
snap
[ -z "$cands" ] && { echo "compare failed: no harness run" | tee -a $R/timeline.txt; exit 1; }
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-540} - ($(date +%s) - T0) ))
echo "harness with v52 $cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v52_sep.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null
snap
