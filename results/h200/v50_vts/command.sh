#!/usr/bin/env bash
# Session 23, call 2: v50a_vts and v50b_vts_trim (v49b with, at D = 64, Vt^T stored split by the prep warps and K^T Vt
# issued from shared memory after Q S0, waited after the y stores; v50b also chunk 0 without Q S0 and the last chunk
# without K^T Vt) against v43_wsg and v49b, each compared under its own short timeout, then one harness run (builds
# before timing); beside the builds probe50 (v50a's consumer phases) and probe46 (who arrives last at the chunk
# barrier) on v49b and v50a.
# Before the call: python .gpu/make_v50.py; probe50.py, probe46.py and compare31.py in .gpu/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v50a_vts v50b_vts_trim"
FILES="$P/v43_wsg.py $P/v49b_ystore_fourbuf.py $P/v50a_vts.py $P/v50b_vts_trim.py"
sha256sum $FILES .gpu/probe50.py .gpu/probe46.py .gpu/compare31.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext50
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
( timeout 300 python .gpu/probe50.py $P/v50a_vts.py > $R/probe50.log 2>&1; echo "probe50 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/logs/probe_rc.txt ) &
( timeout 300 python .gpu/probe46.py $P/v49b_ystore_fourbuf.py $P/v50a_vts.py > $R/probe46.log 2>&1; echo "probe46 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/logs/probe_rc.txt ) &
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
cands=""
for stem in $NEW; do
  timeout 90 python .gpu/compare31.py $stem > $R/compare_$stem.log 2>&1; rc=$?
  echo "compare $stem rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -i 'graph replay\|FAILURES' $R/compare_$stem.log
  if [ $rc -eq 0 ]; then cands="$cands $P/$stem.py"; fi
  snap
done
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-430} - ($(date +%s) - T0) ))
echo "harness with v43 v49b$cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v43_wsg.py $P/v49b_ystore_fourbuf.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
snap
cat $R/logs/probe_rc.txt; tail -40 $R/probe50.log; grep -v '^  warp' $R/probe46.log | tail; grep 'last to arrive' $R/probe46.log | awk '$9+0 > 5' 
