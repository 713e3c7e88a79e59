#!/usr/bin/env bash
# Session 25, call 5: v59a_kblock (v56 with a K^T Vt k scale a block of 32 columns) and v59b_prep_after_qs0 (v59a with the prep split after the consumers' Q S0 conversion)
# against v56_kuni and the float64 recurrence (compare53.py), probe56 on v59b, then one harness run of
# v56 and the files that pass (builds before timing).
# Before the call: python .gpu/make_v59.py; cp .gpu/v59a_kblock.py .gpu/v59b_prep_after_qs0.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
snap() { tar czf $OUT/r5.tgz.tmp -C $OUT r5 && mv $OUT/r5.tgz.tmp $OUT/r5.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v59a_kblock v59b_prep_after_qs0"
FILES="$P/v56_kuni.py $P/v59a_kblock.py $P/v59b_prep_after_qs0.py"
sha256sum $FILES .gpu/probe56.py .gpu/compare53.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext59
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
# probe56 on v59b
( timeout 300 python .gpu/probe56.py $P/v59b_prep_after_qs0.py > $R/probe56_v59b_prep_after_qs0.log 2>&1; echo "probe56 v59b_prep_after_qs0 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
wait
echo "builds and probes done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -il 'error' $R/build_* | head
snap
cands="$P/v56_kuni.py"
for n in $NEW; do
  timeout 150 python .gpu/compare53.py $n v56_kuni > $R/compare_$n.log 2>&1; rc=$?
  echo "compare $n rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -i 'graph replay\|FAILURES\|FAIL' $R/compare_$n.log | head -8
  [ $rc -eq 0 ] && cands="$cands $P/$n.py"
done
grep -v Warning $R/probe56_v59b_prep_after_qs0.log | head -16
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
echo "harness with $cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null
snap
