#!/usr/bin/env bash
# Session 42, the second call: why v79a's median chunk fell 6% (6,572 -> 6,175 cycles, probe76 bare) and its time
# only 1-2% (harness 484 -> 473 us, graph replay 481 -> 477.6, one H100). Every build first, then every timing on a
# quiet host (the first call timed its probes beside compiles: their event medians were inflated). probe76 bare and
# reg on v76b and v79a with the chunk's spread (mean, percentiles, each CTA's span), then a harness run of the two.
# Everything lands in one tarball (the first call's logs exceeded the count of files a call returns).
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v79b; mkdir -p $L
snap() { tar czf $OUT/v79b.tgz.tmp -C $OUT v79b && mv $OUT/v79b.tgz.tmp $OUT/v79b.tgz; }
trap 'snap; rm -rf $L' EXIT
T0=$(date +%s)
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
cp .gpu/v79a_an64.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; } > $L/env.txt 2>&1
sha256sum $P/v76b_tma5d.py $P/v79a_an64.py $R/probe76.py $R/make_v79.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $L/config.yaml
cands="$P/v76b_tma5d.py $P/v79a_an64.py"
( MAX_JOBS=4 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r79b \
    --config $L/config.yaml --build-only > $L/build.log 2>&1; mark "harness build-only rc=$?" ) &
for n in v76b_tma5d v79a_an64; do for m in bare reg; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext79b timeout 240 python $R/probe76.py $P/$n.py --modes=$m --build > $L/build_${n}_$m.log 2>&1
    mark "probe build $n $m rc=$?" ) &
done; done
wait
for job in v76b_tma5d:bare v79a_an64:bare v76b_tma5d:reg v79a_an64:reg; do
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
