#!/usr/bin/env bash
# Session 17, GPU call 1: why v22 missed its prediction. Phase probe of gd_wg_kernel at large (both problems), then
# Nsight Compute (full set, source counters) on gd_wg_kernel at large and gd_ws_kernel at medium.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
trap 'tar czf $OUT/r.tgz --exclude="*.ncu-rep" -C $OUT r; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H 2>/dev/null; } > $R/env.txt 2>&1
sha256sum candidates/*/v22_wg.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext23
T0=$(date +%s)
python .gpu/phase_probe22.py --dry candidates/scalar_gated_delta/v22_wg.py candidates/channel_gated_delta/v22_wg.py > $R/dry.log 2>&1
for f in candidates/scalar_gated_delta/v22_wg.py candidates/channel_gated_delta/v22_wg.py .gpu/probe22_sgd.py .gpu/probe22_cgd.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py)_$(basename $(dirname $f)).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.txt
timeout 120 python .gpu/phase_probe22.py candidates/scalar_gated_delta/v22_wg.py candidates/channel_gated_delta/v22_wg.py > $R/phase.log 2>&1
echo "phase rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/phase.log
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/smi.txt
for job in "scalar large gd_wg_kernel" "channel large gd_wg_kernel" "scalar medium gd_ws_kernel" "channel medium gd_ws_kernel"; do
  set -- $job
  name=ncu_$1_$2
  timeout 110 ncu --clock-control none --set full --import-source yes -k regex:$3 --launch-skip 2 --launch-count 1 -f -o $R/$name \
    python .gpu/drive.py candidates/$1_gated_delta/v22_wg.py $2 > $R/$name.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  ncu --import $R/$name.ncu-rep --page details > $R/${name}_details.txt 2>&1
  ncu --import $R/$name.ncu-rep --page raw --csv > $R/${name}_raw.csv 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass > $R/${name}_sass.csv 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per" $R/${name}_details.txt | head -8
done
