#!/usr/bin/env bash
# Session 25, call 2: Nsight Compute on v56_kuni's gd_wsh_kernel at large (full set, sources), its SASS stall table.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R/logs
snap() { tar czf $OUT/r2.tgz.tmp --exclude="*.ncu-rep" -C $OUT r2 && mv $OUT/r2.tgz.tmp $OUT/r2.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; which ncu; ncu --version; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
sha256sum $P/v56_kuni.py .gpu/drive.py .gpu/an34.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext56n
T0=$(date +%s)
python .gpu/drive.py $P/v56_kuni.py large > $R/logs/build.log 2>&1
echo "build and plain run rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.txt
name=ncu_v56_kuni_large
timeout 300 ncu --clock-control none --set full --import-source yes -k regex:gd_wsh_kernel --launch-skip 2 --launch-count 1 -f -o $R/$name \
  python .gpu/drive.py $P/v56_kuni.py large > $R/logs/$name.log 2>&1
echo "$name rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
ncu --import $R/$name.ncu-rep --page details > $R/${name}_details.txt 2>&1
ncu --import $R/$name.ncu-rep --page raw --csv > $R/logs/${name}_raw.csv 2>&1
ncu --import $R/$name.ncu-rep --page source --csv --print-source sass > $R/logs/${name}_sass.csv 2>&1
python .gpu/an34.py $R/logs/${name}_sass.csv > $R/${name}_stalls.txt 2>&1
grep -E "Duration|Issue Slots Busy|Issued Ipc|Executed Ipc|Tensor|Mem Busy|Max Bandwidth|DRAM Throughput|No Eligible|Eligible Warps|Active Warps|SM Frequency" $R/${name}_details.txt | head -24
head -30 $R/${name}_stalls.txt
