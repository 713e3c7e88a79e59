#!/usr/bin/env bash
# Written in session 45, not run (its device time was spent). v82a_tma11 and v82b_tma10 (make_v82.py: the loop's TMA
# boxes on warp 11 or 10, not warp 15) against v79b_gblate: builds, a harness run, probe76 bare on the three and reg
# on v82a (the vote's last arrival), a second harness run while DL allows. One tarball ($OUT/v82.tgz). Knobs: DL
# (seconds the script may run), CANDS (harness candidates), PROBES=0 (no probes), PROBE_JOBS (name:mode, in order).
# Before: python results/h100/v69_sacc/make_v82.py
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v82; mkdir -p $L
snap() { tar czf $OUT/v82.tgz.tmp -C $OUT v82 && mv $OUT/v82.tgz.tmp $OUT/v82.tgz; }
trap 'snap; rm -rf $L' EXIT
T0=$(date +%s)
DL=${DL:-560}
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
cp .gpu/v82a_tma11.py .gpu/v82b_tma10.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; } > $L/env.txt 2>&1
sha256sum $P/v79b_gblate.py $P/v82a_tma11.py $P/v82b_tma10.py $R/probe76.py $R/make_v82.py harness/judge.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n  cache_dir: /tmp/hb80\n' > $L/config.yaml
cands=${CANDS:-"$P/v79b_gblate.py $P/v82a_tma11.py $P/v82b_tma10.py"}  # CANDS: fewer, when short of device time
( MAX_JOBS=6 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r80/build \
    --config $L/config.yaml --build-only > $L/build.log 2>&1; mark "harness build-only rc=$?" ) &
PROBES=${PROBES:-1}  # PROBES=0: the harness runs only (short of device time)
PROBE_JOBS=${PROBE_JOBS:-"v79b_gblate:bare v82a_tma11:bare v82b_tma10:bare v82a_tma11:reg"}  # in this order
(( PROBES )) && probe_builds=$PROBE_JOBS || probe_builds=""
for job in $probe_builds; do
  n=${job%%:*}; m=${job##*:}
  ( TORCH_EXTENSIONS_DIR=/tmp/ext80 timeout 240 python $R/probe76.py $P/$n.py --modes=$m --build > $L/build_${n}_$m.log 2>&1
    mark "probe build $n $m rc=$?" ) &
done
wait
harness_run() {
  left=$(( DL - ($(date +%s) - T0) ))
  (( left < 100 )) && { mark "harness run $1 skipped ($left s left)"; return; }
  timeout $(( left < 170 ? left : 170 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
    --results /tmp/r80/run$1 --config $L/config.yaml --fresh > $L/harness$1.log 2>&1
  mark "harness run $1 rc=$?"
  grep -E "^[0-9—]+ +v[0-9]|^—" $L/harness$1.log | head -5
  cp -r /tmp/r80/run$1/scalar_gated_delta $L/records$1 2>/dev/null
  snap
}
# session 43: the device was scarce (eleven starts failed), so the first harness run comes before the probes, each
# step checks the time left (DL seconds from the start; pass a smaller DL when the budget is short)
harness_run 1
(( PROBES )) && for job in $PROBE_JOBS; do
  IFS=: read -r n m f <<< "$job"
  left=$(( DL - ($(date +%s) - T0) ))
  (( left < 15 )) && { mark "probe $n $m $f skipped"; continue; }
  TORCH_EXTENSIONS_DIR=/tmp/ext80 timeout $(( left < 90 ? left : 90 )) python $R/probe76.py $P/$n.py --modes=$m $f > $L/probe_${n}_$m$f.log 2>&1
  mark "probe $n $m $f rc=$?"
  grep -v -i warn $L/probe_${n}_$m$f.log | grep -v "^ *$" | tail -20
done
snap
harness_run 2
