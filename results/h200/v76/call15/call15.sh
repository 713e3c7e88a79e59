#!/usr/bin/env bash
# Session 37, the lean form of next_call_v76.sh for a short device budget: builds of v69 and the three v76 files
# (harness run --build-only, into the cache the timed run reuses) beside probe76 (bare) on the v76 files, then one
# harness run of v69 and the v76 files. No compare53 (the harness verifies every shape), no reg mode. Before: make_v74.py, make_v75.py, make_v76.py (README "v76").
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
V76="v76a_gbearly v76b_tma5d v76c_gbtmaqk"
L=$OUT/call_v76; mkdir -p $L
snap() { tar czf $OUT/call_v76.tgz.tmp -C $OUT call_v76 && mv $OUT/call_v76.tgz.tmp $OUT/call_v76.tgz; }
trap 'snap; rm -rf $L' EXIT
for n in $V76; do cp .gpu/$n.py $P/; done
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $L/env.txt 2>&1
sha256sum $P/v69_sacc.py $(for n in $V76; do echo $P/$n.py; done) $R/probe76.py > $L/sha256.txt
T0=$(date +%s)
for n in $V76; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext76 timeout 200 python $R/probe76.py $P/$n.py --modes=bare > $L/probe_${n}_bare.log 2>&1
    echo "probe $n bare rc=$? at $(( $(date +%s) - T0 )) s" >> $L/timeline.txt ) &
done
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $L/config.yaml
cands="$P/v69_sacc.py"; for n in $V76; do cands="$cands $P/$n.py"; done
( MAX_JOBS=4 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/results \
    --config $L/config.yaml --build-only > $L/build.log 2>&1
  echo "harness build-only rc=$? at $(( $(date +%s) - T0 )) s" >> $L/timeline.txt ) &
wait
cat $L/timeline.txt
for n in $V76; do grep -v -i warn $L/probe_${n}_bare.log | tail -12; done
snap
tail -8 $L/build.log
left=$(( ${LIMIT:-330} - ($(date +%s) - T0) ))
echo "harness with $cands, $left s left" | tee -a $L/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/results --config $L/config.yaml > $L/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt
tail -16 $L/harness.log
cp -r /tmp/results/scalar_gated_delta $L/records 2>/dev/null
