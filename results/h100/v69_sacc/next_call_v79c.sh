#!/usr/bin/env bash
# Session 42, the third call: v79b_gblate (make_v79.py: the issuer's gate and beta loads after its TMA boxes) beside
# v79a (probe76 bare and reg on both; the chunk's spread) and a harness run of v76b, v79a and v79b. Builds first,
# then timings on a quiet host; one tarball.
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v79c; mkdir -p $L
snap() { tar czf $OUT/v79c.tgz.tmp -C $OUT v79c && mv $OUT/v79c.tgz.tmp $OUT/v79c.tgz; }
trap 'snap; rm -rf $L' EXIT
T0=$(date +%s)
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
cp .gpu/v79a_an64.py .gpu/v79b_gblate.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; } > $L/env.txt 2>&1
sha256sum $P/v76b_tma5d.py $P/v79a_an64.py $P/v79b_gblate.py $R/probe76.py $R/make_v79.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $L/config.yaml
cands="$P/v76b_tma5d.py $P/v79a_an64.py $P/v79b_gblate.py"
( MAX_JOBS=4 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r79b \
    --config $L/config.yaml --build-only > $L/build.log 2>&1; mark "harness build-only rc=$?" ) &
for n in v79a_an64 v79b_gblate; do for m in bare reg; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext79b timeout 240 python $R/probe76.py $P/$n.py --modes=$m --build > $L/build_${n}_$m.log 2>&1
    mark "probe build $n $m rc=$?" ) &
done; done
wait
for job in v79a_an64:bare v79b_gblate:bare v79a_an64:reg v79b_gblate:reg; do
  n=${job%%:*}; m=${job##*:}
  TORCH_EXTENSIONS_DIR=/tmp/ext79b timeout 90 python $R/probe76.py $P/$n.py --modes=$m > $L/probe_${n}_$m.log 2>&1
  mark "probe $n $m rc=$?"
  grep -v -i warn $L/probe_${n}_$m.log | grep -v "^ *$" | tail -20
done
snap
left=$(( 540 - ($(date +%s) - T0) )); mark "harness run, $left s left"
timeout $(( left < 200 ? left : 200 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/r79b --config $L/config.yaml > $L/harness.log 2>&1
mark "harness rc=$?"
tail -9 $L/harness.log
cp -r /tmp/r79b/scalar_gated_delta $L/records 2>/dev/null
