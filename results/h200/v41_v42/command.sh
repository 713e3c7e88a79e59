#!/usr/bin/env bash
# Session 21, call 3: v41 (v29a with the Vt^T fragments first at D = 128) and v42 (v39b with the prep warps' split dealt
# evenly and shorter A-tile chains at D = 64) against v29a; one harness run with its builds done before any timing
# (build.overlap_evaluation: never); the barrier-wait probe on all three. Before the call: python .gpu/make_v41.py;
# python .gpu/probe41.py --dry FILES.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v41_vt_first v42_prep_balance"
FILES="$P/v29a_wsg.py $P/v41_vt_first.py $P/v42_prep_balance.py"
PROBES=".gpu/probebw_v29a_wsg.py .gpu/probebw_v41_vt_first.py .gpu/probebw_v42_prep_balance.py"
sha256sum $FILES > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext41
T0=$(date +%s)
for f in $FILES $PROBES; do
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
left=$(( ${LIMIT:-530} - ($(date +%s) - T0) ))  # the harness builds each candidate again (~60-70 s)
echo "harness with$cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v29a_wsg.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
snap
timeout 45 python .gpu/probe41.py $FILES > $R/barrier_wait.log 2>&1
echo "probe rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/barrier_wait.log; snap
