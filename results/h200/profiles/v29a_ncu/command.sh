#!/usr/bin/env bash
# Session 20, call 2: v34s2 / v34s4 (v33 with the CTAs started in 2 / 4 phases over a chunk) against v29a and v33,
# then Nsight Compute on v29a's gd_wsg_kernel at medium and large and on v34s4's at medium.
# Before the call: python .gpu/make_v32.py; python .gpu/make_v33.py; python .gpu/make_v34.py.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp --exclude="*.ncu-rep" -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; which ncu; ncu --version; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW="v34s2_stagger v34s4_stagger"
sha256sum $P/v29a_wsg.py $P/v33_yprep_ql.py $P/v34s2_stagger.py $P/v34s4_stagger.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext34
T0=$(date +%s)
for f in $P/v29a_wsg.py $P/v33_yprep_ql.py $P/v34s2_stagger.py $P/v34s4_stagger.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
timeout 120 python .gpu/compare30.py v33_yprep_ql $NEW > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|failed' $R/compare.log; snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/config.yaml
timeout 260 python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v29a_wsg.py $P/v33_yprep_ql.py $P/v34s2_stagger.py $P/v34s4_stagger.py \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -10 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null; snap
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.txt
for job in "v29a_wsg medium" "v29a_wsg large" "v34s4_stagger medium"; do
  set -- $job
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { echo "skip $job, $left s left" | tee -a $R/timeline.txt; continue; }
  name=ncu_$1_$2
  timeout $(( left - 10 )) ncu --clock-control none --set full --import-source yes -k regex:gd_wsg_kernel --launch-skip 2 --launch-count 1 -f -o $R/$name \
    python .gpu/drive.py $P/$1.py $2 > $R/logs/$name.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  ncu --import $R/$name.ncu-rep --page details > $R/${name}_details.txt 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass > $R/logs/${name}_sass.csv 2>&1
  python .gpu/an34.py $R/logs/${name}_sass.csv > $R/${name}_stalls.txt 2>&1
  grep -E "Duration|Issue Slots Busy|Tensor|L1/TEX Hit|Mem Busy|Max Bandwidth|DRAM Throughput|No Eligible|Eligible Warps" $R/${name}_details.txt | head -14
  head -30 $R/${name}_stalls.txt
  snap
done
