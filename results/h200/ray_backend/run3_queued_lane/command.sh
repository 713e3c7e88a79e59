#!/usr/bin/env bash
# Issue 15: 10 copies of v13 at seed through Ray (one node, the GPU) with one evaluation queued behind the GPU.
# Issue 17 step 1: Nsight Compute on v13's chunkwise kernel at medium and large.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'cp -r /tmp/rs_work/config.yaml $R/ 2>/dev/null; tar -czf $OUT/callE.tgz -C $R . ; ls -la $OUT' EXIT
mkdir -p /tmp/site && tar -xJf .ray/ray_site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site
cd .gpu/tree
nvidia-smi > $R/env.txt; echo "commit $(cat COMMIT)" >> $R/env.txt; nproc >> $R/env.txt
timeout 330 python3 tools/ray_scale.py --device cuda --honest candidates/scalar_gated_delta/v13_seed_tc.py --count 10 \
  --nodes 1 --gpus-per-node 1 --cpus-per-node 16 --budget 0.5 --out $R/scale --work /tmp/rs_work > $R/scale.log 2>&1
echo "ray rc=$? at $(( $(date +%s) - T0 )) s"; tail -3 $R/scale.log
tar -czf $R/ray_results.tgz -C /tmp/rs_work results-1 2>/dev/null
unset PYTHONPATH
for shape in medium large; do
  timeout $([ $shape = medium ] && echo 170 || echo 100) ncu --clock-control none --set full -k regex:gd_tc_kernel --launch-skip 2 --launch-count 1 -f -o $R/ncu_$shape \
    python3 ../ncu_candidate.py candidates/scalar_gated_delta/v13_seed_tc.py $shape > $R/ncu_$shape.log 2>&1
  echo "ncu $shape rc=$? at $(( $(date +%s) - T0 )) s"
  ncu --import $R/ncu_$shape.ncu-rep --page details > $R/ncu_${shape}_details.txt 2>&1
  ncu --import $R/ncu_$shape.ncu-rep --page raw --csv > $R/ncu_${shape}_raw.csv 2>&1
done
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size|Waves" $R/ncu_large_details.txt | head -20
