#!/usr/bin/env bash
# Session 24, call 5: v56_kuni (v54 with K^T Vt's k pieces under one scale a chunk, so the state update loses a
# multiply and 16 loads an element row) against v54_famat and the float64 recurrence (compare53.py), then one harness
# run of both (builds before timing).
# Before the call: python .gpu/make_v56.py; cp .gpu/v56_kuni.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
snap() { tar czf $OUT/r5.tgz.tmp -C $OUT r5 && mv $OUT/r5.tgz.tmp $OUT/r5.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v54_famat.py $P/v56_kuni.py"
sha256sum $FILES .gpu/compare53.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext56
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -il 'error' $R/build_* | head
timeout 120 python .gpu/compare53.py v56_kuni v54_famat > $R/compare_v56_kuni.log 2>&1; rc=$?
echo "compare v56_kuni rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|FAIL' $R/compare_v56_kuni.log | head -8
[ $rc -eq 0 ] || exit 1
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-400} - ($(date +%s) - T0) ))
echo "harness, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $FILES \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -8 $R/harness.log
cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null
snap
