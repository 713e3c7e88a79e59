#!/usr/bin/env bash
# Session 46, call 2: v79b_gblate on the H200 under a clock log. Builds (the harness's and drive.py's, in parallel),
# then with nvidia-smi sampling clocks, power and the clock-event reasons every 500 ms (read only; no setting
# changed): Nsight Compute (--set full, sources, clocks not locked) on the third gd_wsh_kernel
# launch at large, probe76 bare and reg, harness runs 1 and 2. One tarball ($OUT/r.tgz, the .ncu-rep left out). DL: seconds allowed.
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v79b_ncu; mkdir -p $L/logs
snap() { tar czf $OUT/r.tgz.tmp --exclude="*.ncu-rep" -C $OUT v79b_ncu && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'kill $SMI 2>/dev/null; snap' EXIT
SMI=0
T0=$(date +%s)
DL=${DL:-400}
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE
  python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; which ncu; ncu --version
} > $L/env.txt 2>&1
nvidia-smi --help-query-gpu > $L/logs/smi_fields.txt 2>&1
sha256sum $P/v79b_gblate.py $R/probe76.py .gpu/drive.py .gpu/an34.py harness/judge.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n  cache_dir: /tmp/hb83\n' > $L/config.yaml
( MAX_JOBS=6 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v79b_gblate.py \
    --results /tmp/r83/build --config $L/config.yaml --build-only > $L/logs/build.log 2>&1; mark "harness build-only rc=$?" ) &
( TORCH_EXTENSIONS_DIR=/tmp/ext83 timeout 240 python .gpu/drive.py $P/v79b_gblate.py large > $L/logs/build_drive.log 2>&1
  mark "drive build and run rc=$?" ) &
for m in bare reg; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext83p timeout 240 python $R/probe76.py $P/v79b_gblate.py --modes=$m --build > $L/logs/build_probe_$m.log 2>&1
    mark "probe build $m rc=$?" ) &
done
wait
fields=timestamp,clocks.sm,clocks.max.sm,clocks.applications.graphics,clocks.default_applications.graphics,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$fields --format=csv -lms 500 > $L/smi.csv 2>&1 &
SMI=$!
harness_run() {
  left=$(( DL - ($(date +%s) - T0) ))
  (( left < 80 )) && { mark "harness run $1 skipped ($left s left)"; return; }
  timeout $(( left < 150 ? left : 150 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v79b_gblate.py \
    --results /tmp/r83/run$1 --config $L/config.yaml --fresh > $L/harness$1.log 2>&1
  mark "harness run $1 rc=$?"
  grep -E "^[0-9=]+ +v[0-9]" $L/harness$1.log | head -3
  cp -r /tmp/r83/run$1/scalar_gated_delta $L/records$1 2>/dev/null
  snap
}
name=ncu_v79b_gblate_large
left=$(( DL - ($(date +%s) - T0) ))
if (( left > 60 )); then
  TORCH_EXTENSIONS_DIR=/tmp/ext83 timeout 120 ncu --clock-control none --set full --import-source yes -k regex:gd_wsh_kernel \
    --launch-skip 2 --launch-count 1 -f -o $L/$name python .gpu/drive.py $P/v79b_gblate.py large > $L/logs/$name.log 2>&1
  mark "$name rc=$?"
  ncu --import $L/$name.ncu-rep --page details > $L/${name}_details.txt 2>&1
  ncu --import $L/$name.ncu-rep --page raw --csv > $L/logs/${name}_raw.csv 2>&1
  ncu --import $L/$name.ncu-rep --page source --csv --print-source sass > $L/logs/${name}_sass.csv 2>&1
  python .gpu/an34.py $L/logs/${name}_sass.csv > $L/${name}_stalls.txt 2>&1
  mark "ncu exports"
  grep -E "Duration|SM Frequency|Issue Slots Busy|Executed Ipc|No Eligible|Eligible Warps|DRAM Throughput|Mem Busy" $L/${name}_details.txt | head -12
  head -4 $L/${name}_stalls.txt
  snap
fi
for m in bare reg; do
  (( DL - ($(date +%s) - T0) < 15 )) && { mark "probe $m skipped"; continue; }
  TORCH_EXTENSIONS_DIR=/tmp/ext83p timeout 60 python $R/probe76.py $P/v79b_gblate.py --modes=$m > $L/probe_v79b_gblate_$m.log 2>&1
  mark "probe $m rc=$?"
  grep -v -i warn $L/probe_v79b_gblate_$m.log | grep -v "^ *$" | head -20
done
harness_run 1
harness_run 2
kill $SMI 2>/dev/null
