#!/usr/bin/env bash
# Written in session 46, not run (its device time was spent). v83a_adesc and v83b_wg1scan (make_v83.py: A's
# descriptors stepped; the gate scan off warpgroup 0) against v79b_gblate: builds, harness run 1, probe76 (bare on
# the three, reg on v83b and v79b), Nsight Compute
# (--set full, sources, clocks not locked) on the third gd_wsh_kernel launch at large of each (NCU=0: none), under
# an nvidia-smi log of clocks, power and clock-event reasons (read only), then harness run 2 while DL allows.
# One tarball ($OUT/v83.tgz, .ncu-rep files left out). Knobs: DL, CANDS, PROBE_JOBS (name:mode), NCU.
# Session 47: probe76 also reads each CTA's entry, SM and exit (lines "CTAs:", "SMs:"; marks under $L/cta), and
# v83c_early (v83b with chunk 0's boxes before the setup's zeroing) joins the harness runs and the bare probes
# (~35 s more a harness run: DL 480 -> 540, ~510 s on a started machine).
# Before: python results/h100/v69_sacc/make_v83.py
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v83; mkdir -p $L/logs
snap() { tar czf $OUT/v83.tgz.tmp --exclude="*.ncu-rep" -C $OUT v83 && mv $OUT/v83.tgz.tmp $OUT/v83.tgz; }
SMI=0
trap 'kill $SMI 2>/dev/null; snap; rm -rf $L' EXIT
T0=$(date +%s)
DL=${DL:-540}
NCU=${NCU:-1}
left() { echo $(( DL - ($(date +%s) - T0) )); }
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
cp .gpu/v83a_adesc.py .gpu/v83b_wg1scan.py .gpu/v83c_early.py $P/
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE
  python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; which ncu; ncu --version
} > $L/env.txt 2>&1
sha256sum $P/v79b_gblate.py $P/v83a_adesc.py $P/v83b_wg1scan.py $P/v83c_early.py $R/probe76.py $R/cta_spans.py $R/make_v83.py results/h200/v63_tma/drive.py results/h200/profiles/v29a_ncu/an34.py harness/judge.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n  cache_dir: /tmp/hb83\n' > $L/config.yaml
cands=${CANDS:-"$P/v79b_gblate.py $P/v83a_adesc.py $P/v83b_wg1scan.py $P/v83c_early.py"}
( MAX_JOBS=4 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r83/build \
    --config $L/config.yaml --build-only > $L/logs/build.log 2>&1; mark "harness build-only rc=$?" ) &
PROBE_JOBS=${PROBE_JOBS:-"v79b_gblate:bare v83a_adesc:bare v83b_wg1scan:bare v83c_early:bare v83b_wg1scan:reg v79b_gblate:reg"}
for job in $PROBE_JOBS; do
  n=${job%%:*}; m=${job##*:}
  ( TORCH_EXTENSIONS_DIR=/tmp/ext83p timeout 240 python $R/probe76.py $P/$n.py --modes=$m --build > $L/logs/build_${n}_$m.log 2>&1
    mark "probe build $n $m rc=$?" ) &
done
(( NCU )) && for n in v79b_gblate v83b_wg1scan; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext83d timeout 240 python results/h200/v63_tma/drive.py $P/$n.py large > $L/logs/build_drive_$n.log 2>&1
    mark "drive build $n rc=$?" ) &
done
wait
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,clocks.applications.graphics,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > $L/smi.csv 2>&1 &
SMI=$!
harness_run() {
  (( $(left) < 100 )) && { mark "harness run $1 skipped ($(left) s left)"; return; }
  timeout $(( $(left) < 170 ? $(left) : 170 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
    --results /tmp/r83/run$1 --config $L/config.yaml --fresh > $L/harness$1.log 2>&1
  mark "harness run $1 rc=$?"
  grep -E "^[0-9=]+ +v[0-9]" $L/harness$1.log | head -4
  cp -r /tmp/r83/run$1/scalar_gated_delta $L/records$1 2>/dev/null
  snap
}
harness_run 1
for job in $PROBE_JOBS; do
  n=${job%%:*}; m=${job##*:}
  (( $(left) < 15 )) && { mark "probe $n $m skipped"; continue; }
  PROBE_DUMP=$L/cta TORCH_EXTENSIONS_DIR=/tmp/ext83p timeout 60 python $R/probe76.py $P/$n.py --modes=$m > $L/probe_${n}_$m.log 2>&1
  mark "probe $n $m rc=$?"
  grep -v -i warn $L/probe_${n}_$m.log | grep -v "^ *$" | head -20
done
timeout 30 python $R/cta_spans.py $L/cta > $L/cta_spans.txt 2>&1; tail -12 $L/cta_spans.txt
snap
(( NCU )) && for n in v79b_gblate v83b_wg1scan; do
  (( $(left) < 60 )) && { mark "ncu $n skipped"; continue; }
  name=ncu_${n}_large
  TORCH_EXTENSIONS_DIR=/tmp/ext83d timeout 120 ncu --clock-control none --set full --import-source yes -k regex:gd_wsh_kernel \
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
