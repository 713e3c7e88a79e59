#!/usr/bin/env bash
# Session 26, call 2: v61a_presplit (v56 with the state's fp16 pieces made before the CTA barrier) against v56_kuni
# and the float64 recurrence (compare53.py), probe56 on both, then one harness run of v56 and the files that pass.
# Before the call: python .gpu/make_v61.py; cp .gpu/v61a_presplit.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
N=${RUN:-r2}
R=$OUT/$N; mkdir -p $R
snap() { tar czf $OUT/$N.tgz.tmp -C $OUT $N && mv $OUT/$N.tgz.tmp $OUT/$N.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW=${NEW:-v61a_presplit}
PROBE=${PROBE:-"v56_kuni $NEW"}
FILES="$P/v56_kuni.py"; for n in $NEW; do FILES="$FILES $P/$n.py"; done
sha256sum $FILES .gpu/probe56.py .gpu/compare53.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext61
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
for n in $PROBE; do
  ( timeout 300 python .gpu/probe56.py $P/$n.py > $R/probe56_$n.log 2>&1; echo "probe56 $n rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
done
wait
echo "builds and probes done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -il 'error' $R/build_* | head
for n in $PROBE; do grep -v Warning $R/probe56_$n.log | head -17; done
snap
cands="$P/v56_kuni.py"
for n in $NEW; do
  timeout 150 python .gpu/compare53.py $n v56_kuni > $R/compare_$n.log 2>&1; rc=$?
  echo "compare $n rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -i 'graph replay\|FAILURES\|FAIL\|bitwise' $R/compare_$n.log | head -8
  [ $rc -eq 0 ] && cands="$cands $P/$n.py"
done
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
