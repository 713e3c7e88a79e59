#!/usr/bin/env bash
# Session 23, call 1 (prepared in session 22, not run): v49a_ystore, v49b_ystore_fourbuf, v49c_ystore_asplit,
# v49d_ystore_desc (v43 with the y stores of a full chunk without branches; v49b also four input buffers at D = 64;
# v49c also A stored split by the prep warps at D = 64; v49d also the wgmma descriptors as base + step) against
# v43_wsg, each compared under its own short timeout, then one harness run (builds before timing); also probe47 on
# v49d (the consumers' phases), beside the builds.
# Before the call: python .gpu/make_v49.py (needs make_v46.py beside it).
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v49a_ystore v49b_ystore_fourbuf v49c_ystore_asplit v49d_ystore_desc"
FILES="$P/v43_wsg.py $P/v49a_ystore.py $P/v49b_ystore_fourbuf.py $P/v49c_ystore_asplit.py $P/v49d_ystore_desc.py"
sha256sum $FILES .gpu/probe47.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext48
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
( timeout 300 python .gpu/probe47.py $P/v49d_ystore_desc.py > $R/probe47.log 2>&1; echo "probe47 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/logs/probe47_rc.txt ) &
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
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv >> $R/timeline.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-420} - ($(date +%s) - T0) ))
echo "harness with v43$cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v43_wsg.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
snap
cat $R/logs/probe47_rc.txt; tail -40 $R/probe47.log
