#!/usr/bin/env bash
# Session 23, call 4: v52_sep (v51a with, at D = 64, q hi and K^T hi in arrays of their own, the gate scan and vote
# first, and the A tiles built from the raw inputs beside the other prep warps' split) against v43_wsg and v51a_trim,
# compared under a short timeout, then one harness run (builds before timing); beside the builds probe46 (each warp's
# arrival at the chunk barrier) on v52.
# Before the call: python .gpu/make_v52.py; probe46.py and compare31.py in .gpu/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v43_wsg.py $P/v51a_trim.py $P/v52_sep.py"
sha256sum $FILES .gpu/probe46.py .gpu/compare31.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext52
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
( timeout 200 python .gpu/probe46.py $P/v52_sep.py > $R/probe46.log 2>&1; echo "probe46 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/logs/probe_rc.txt ) &
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
cands=""
timeout 90 python .gpu/compare31.py v52_sep > $R/compare_v52_sep.log 2>&1; rc=$?
echo "compare v52_sep rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES' $R/compare_v52_sep.log
if [ $rc -eq 0 ]; then cands="$P/v52_sep.py"; fi
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-380} - ($(date +%s) - T0) ))
echo "harness with v43 v51a $cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v43_wsg.py $P/v51a_trim.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -10 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
snap
cat $R/logs/probe_rc.txt; grep -v Warning $R/probe46.log | head -40
