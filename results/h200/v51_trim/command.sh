#!/usr/bin/env bash
# Session 23, call 3: v51a_trim (v49b with chunk 0 without Q S0, the last chunk without K^T Vt and the state update)
# and v51b_deal (v51a with the prep split items dealt away from the A-tile warps) against v43_wsg and v49b, each
# compared under its own short timeout, then one harness run (builds before timing); beside the builds probe51 (every
# warp's chunk by phase) on v51a and on v51b.
# Before the call: python .gpu/make_v51.py; probe51.py and compare31.py in .gpu/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v51a_trim v51b_deal"
FILES="$P/v43_wsg.py $P/v49b_ystore_fourbuf.py $P/v51a_trim.py $P/v51b_deal.py"
sha256sum $FILES .gpu/probe51.py .gpu/compare31.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext51
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
for stem in $NEW; do
  ( timeout 300 python .gpu/probe51.py $P/$stem.py > $R/probe51_$stem.log 2>&1; echo "probe51 $stem rc=$? at $(( $(date +%s) - T0 )) s" >> $R/logs/probe_rc.txt ) &
done
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
cat $R/logs/probe_rc.txt; cat $R/probe51_*.log | grep -v Warning | tail -44
