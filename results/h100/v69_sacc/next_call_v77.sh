#!/usr/bin/env bash
# Session 37: v77_tmaspread (make_v77.py) on probe76 bare and reg, beside the harness's builds of it and of
# v76b_tma5d (--build-only), then one harness run of the two (v76b, the catalogue's file: the same machine's
# baseline). Before: python results/h100/v69_sacc/make_v77.py (README "v77"). Not run yet.
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
V77="v77_tmaspread"
L=$OUT/call_v77; mkdir -p $L
snap() { tar czf $OUT/call_v77.tgz.tmp -C $OUT call_v77 && mv $OUT/call_v77.tgz.tmp $OUT/call_v77.tgz; }
trap 'snap; rm -rf $L' EXIT
for n in $V77; do cp .gpu/$n.py $P/; done
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $L/env.txt 2>&1
sha256sum $(for n in v76b_tma5d $V77; do echo $P/$n.py; done) $R/probe76.py > $L/sha256.txt
T0=$(date +%s)
for n in $V77; do for m in bare reg; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext77 timeout 170 python $R/probe76.py $P/$n.py --modes=$m > $L/probe_${n}_$m.log 2>&1
    echo "probe $n $m rc=$? at $(( $(date +%s) - T0 )) s" >> $L/timeline.txt ) &
done; done
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $L/config.yaml
cands="$P/v76b_tma5d.py"; for n in $V77; do cands="$cands $P/$n.py"; done
( MAX_JOBS=4 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/results \
    --config $L/config.yaml --build-only > $L/build.log 2>&1
  echo "harness build-only rc=$? at $(( $(date +%s) - T0 )) s" >> $L/timeline.txt ) &
wait
cat $L/timeline.txt
for n in $V77; do for m in bare reg; do grep -v -i warn $L/probe_${n}_$m.log | tail -20; done; done
snap
tail -6 $L/build.log
left=$(( ${LIMIT:-230} - ($(date +%s) - T0) ))
echo "harness with $cands, $left s left" | tee -a $L/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/results --config $L/config.yaml > $L/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt
tail -12 $L/harness.log
cp -r /tmp/results/scalar_gated_delta $L/records 2>/dev/null
