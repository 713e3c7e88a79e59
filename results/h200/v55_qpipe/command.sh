#!/usr/bin/env bash
# Session 24, call 4: v55a_qpipe (v54 with Q S0's fp16 pieces converted a group ahead of the wgmma) and
# v55b_ktvt_first (v55a with K^T Vt issued before the y stores; registers 176 / 80) against v54_famat and the float64
# recurrence (compare53.py), graph replay at large, then one harness run of v54, v55a, v55b (builds before timing).
# Before the call: python .gpu/make_v55.py; cp .gpu/v55*.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r4; mkdir -p $R
snap() { tar czf $OUT/r4.tgz.tmp -C $OUT r4 && mv $OUT/r4.tgz.tmp $OUT/r4.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v54_famat.py $P/v55a_qpipe.py $P/v55b_ktvt_first.py"
sha256sum $FILES .gpu/time53.py .gpu/compare53.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext55
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -il 'error' $R/build_* | head
cands="$P/v54_famat.py"
for s in v55a_qpipe v55b_ktvt_first; do
  timeout 120 python .gpu/compare53.py $s v54_famat > $R/compare_$s.log 2>&1; rc=$?
  echo "compare $s rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -i 'graph replay\|FAILURES\|FAIL' $R/compare_$s.log | head -8
  if [ $rc -eq 0 ]; then cands="$cands $P/$s.py"; fi
done
timeout 100 python .gpu/time53.py $FILES > $R/time53.log 2>&1
cat $R/time53.log
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
