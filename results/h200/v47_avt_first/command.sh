#!/usr/bin/env bash
# Session 22, call 3: v47a_avt_first and v47b_avt_free (v43 with A Vt issued before Q S0 into its own
# accumulators; v47b the same as plain asm) against v43_wsg, each compared under its own short timeout,
# then one harness run (builds before timing); also probe47 on v43 (the consumers' phases), beside the builds.
# Before the call: python .gpu/make_v47.py.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v47a_avt_first v47b_avt_free"
FILES="$P/v43_wsg.py $P/v47a_avt_first.py $P/v47b_avt_free.py"
sha256sum $FILES .gpu/probe47.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext46
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
( timeout 300 python .gpu/probe47.py $P/v43_wsg.py > $R/probe47.log 2>&1; echo "probe47 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/logs/probe47_rc.txt ) &
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
