#!/usr/bin/env bash
# Prepared in session 19, not run (no device time left): v32_yprep (y at D = 64 staged in its own buffer, stored by the
# prep warps) and v33_yprep_ql (y staged over chunk c's q lo at D = 64 and 128, stored by the prep warps) against v29a.
# Before the call: python .gpu/make_v32.py && python .gpu/make_v33.py (they write the two files into the scalar folder).
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v32_yprep v33_yprep_ql"
sha256sum $P/v29a_wsg.py $P/v32_yprep.py $P/v33_yprep_ql.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext33
T0=$(date +%s)
python .gpu/probe32.py $P/v32_yprep.py $P/v33_yprep_ql.py --dry > $R/logs/dry.log 2>&1
for f in $P/v29a_wsg.py $P/v32_yprep.py $P/v33_yprep_ql.py .gpu/probe_v32_yprep.py .gpu/probe_v33_yprep_ql.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
timeout 240 python .gpu/compare30.py $NEW > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|failed' $R/compare.log; snap
timeout 90 python .gpu/probe32.py $P/v32_yprep.py $P/v33_yprep_ql.py > $R/phase.log 2>&1
echo "phase rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/phase.log; snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/config.yaml
cands=""
for stem in $NEW; do
  if ! grep -q "^$stem: load failed" $R/compare.log; then cands="$cands $P/$stem.py"; fi
done
left=$(( 540 - ($(date +%s) - T0) ))
echo "harness with$cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v29a_wsg.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
