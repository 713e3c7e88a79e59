#!/usr/bin/env bash
# One device call for scalar candidates at large (session 47; the steps every next_call_v8x.sh since v80 repeated).
# Every build first, in parallel (harness --build-only, probe76 builds, drive.py builds for Nsight Compute); then, on
# a quiet GPU under an nvidia-smi log of clocks, power and clock-event reasons (read only): harness run 1, probe76
# (per-CTA marks under cta/, cta_spans.py over them), Nsight Compute (--set full, sources, clocks not locked) on
# the third gd_wsh_kernel launch at large, harness run 2; each step only while DL allows. Leaves one tarball,
# $OUT/$TAG.tgz (.ncu-rep files left out).
#   TAG         the call's name (required): $OUT/$TAG.tgz
#   NEW         .gpu/NAME.py files to copy into the catalogue folder first (names, no .py)
#   CANDS       harness candidates (names; default: v79b_gblate and NEW)
#   PROBE_JOBS  probe76 runs, NAME:MODE (default: every candidate bare)
#   NCU_FILES   names to profile (default: none; NCU=0 skips them too)
#   GEN         the generator of NEW, hashed beside them
#   DL          seconds the script may run (default 540)
set -u
export PYTHONUNBUFFERED=1
: "${TAG:?TAG names the call}"
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/$TAG; mkdir -p $L/logs
snap() { tar czf $OUT/$TAG.tgz.tmp --exclude="*.ncu-rep" -C $OUT $TAG && mv $OUT/$TAG.tgz.tmp $OUT/$TAG.tgz; }
SMI=0
trap 'kill $SMI 2>/dev/null; snap; rm -rf $L' EXIT
T0=$(date +%s)
DL=${DL:-540}
NEW=${NEW:-}
CANDS=${CANDS:-"v79b_gblate $NEW"}
PROBE_JOBS=${PROBE_JOBS:-$(for n in $CANDS; do printf '%s:bare ' $n; done)}
(( ${NCU:-1} )) && NCU_FILES=${NCU_FILES:-} || NCU_FILES=""
left() { echo $(( DL - ($(date +%s) - T0) )); }
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
for n in $NEW; do cp .gpu/$n.py $P/; done
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE
  python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; which ncu; ncu --version
} > $L/env.txt 2>&1
sha256sum $(for n in $CANDS; do echo $P/$n.py; done) $R/probe76.py $R/cta_spans.py $R/call.sh ${GEN:-} \
  results/h200/v63_tma/drive.py results/h200/profiles/v29a_ncu/an34.py harness/judge.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n  cache_dir: /tmp/hb_%s\n' $TAG > $L/config.yaml
cands=$(for n in $CANDS; do echo $P/$n.py; done)
( MAX_JOBS=4 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r_$TAG/build \
    --config $L/config.yaml --build-only > $L/logs/build.log 2>&1; mark "harness build-only rc=$?" ) &
for job in $PROBE_JOBS; do
  n=${job%%:*}; m=${job##*:}
  ( TORCH_EXTENSIONS_DIR=/tmp/ext_${TAG}p timeout 240 python $R/probe76.py $P/$n.py --modes=$m --build > $L/logs/build_${n}_$m.log 2>&1
    mark "probe build $n $m rc=$?" ) &
done
for n in $NCU_FILES; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext_${TAG}d timeout 240 python results/h200/v63_tma/drive.py $P/$n.py large > $L/logs/build_drive_$n.log 2>&1
    mark "drive build $n rc=$?" ) &
done
wait
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,clocks.applications.graphics,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > $L/smi.csv 2>&1 &
SMI=$!
harness_run() {
  (( $(left) < 100 )) && { mark "harness run $1 skipped ($(left) s left)"; return; }
  timeout $(( $(left) < 200 ? $(left) : 200 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
    --results /tmp/r_$TAG/run$1 --config $L/config.yaml --fresh > $L/harness$1.log 2>&1
  mark "harness run $1 rc=$?"
  grep -E "^[0-9=]+ +v[0-9]" $L/harness$1.log | head -6
  cp -r /tmp/r_$TAG/run$1/scalar_gated_delta $L/records$1 2>/dev/null
  snap
}
harness_run 1
for job in $PROBE_JOBS; do
  n=${job%%:*}; m=${job##*:}
  (( $(left) < 15 )) && { mark "probe $n $m skipped"; continue; }
  PROBE_DUMP=$L/cta TORCH_EXTENSIONS_DIR=/tmp/ext_${TAG}p timeout 60 python $R/probe76.py $P/$n.py --modes=$m > $L/probe_${n}_$m.log 2>&1
  mark "probe $n $m rc=$?"
  grep -v -i warn $L/probe_${n}_$m.log | grep -v "^ *$" | head -20
done
[ -d $L/cta ] && { timeout 30 python $R/cta_spans.py $L/cta > $L/cta_spans.txt 2>&1; tail -12 $L/cta_spans.txt; }
snap
for n in $NCU_FILES; do
  (( $(left) < 60 )) && { mark "ncu $n skipped"; continue; }
  name=ncu_${n}_large
  TORCH_EXTENSIONS_DIR=/tmp/ext_${TAG}d timeout 120 ncu --clock-control none --set full --import-source yes -k regex:gd_wsh_kernel \
    --launch-skip 2 --launch-count 1 -f -o $L/$name python results/h200/v63_tma/drive.py $P/$n.py large > $L/logs/$name.log 2>&1
  mark "$name rc=$?"
  ncu --import $L/$name.ncu-rep --page details > $L/${name}_details.txt 2>&1
  ncu --import $L/$name.ncu-rep --page source --csv --print-source sass > $L/logs/${name}_sass.csv 2>&1
  python results/h200/profiles/v29a_ncu/an34.py $L/logs/${name}_sass.csv > $L/${name}_stalls.txt 2>&1
  mark "$name exports"
  grep -E "Duration|SM Frequency|Issue Slots Busy|Executed Ipc|No Eligible|Eligible Warps|DRAM Throughput|Mem Busy" $L/${name}_details.txt | head -10
  snap
done
harness_run 2
