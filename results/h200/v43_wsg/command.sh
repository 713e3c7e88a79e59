#!/usr/bin/env bash
# Session 21, call 4: v43 (v29a at D = 64, v42's code at D = 128) and v44 (v39b with v42's split dealing) against
# v29a; one harness run with its builds done before any timing (build.overlap_evaluation: never). Before the call:
# python .gpu/make_v39.py; python .gpu/make_v41.py.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v43_wsg v44_ksplit"
FILES="$P/v29a_wsg.py $P/v43_wsg.py $P/v44_ksplit.py"
sha256sum $FILES > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext43
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
timeout 150 python .gpu/compare30.py $NEW > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|failed' $R/compare.log; snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
cands=""
for stem in $NEW; do
  if ! grep -q "^$stem: load failed" $R/compare.log; then cands="$cands $P/$stem.py"; fi
done
left=$(( ${LIMIT:-500} - ($(date +%s) - T0) ))
echo "harness with$cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v29a_wsg.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
snap
