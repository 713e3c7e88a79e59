#!/usr/bin/env bash
# Session 13, call N:
#  1. tools/gold_bench.py: one float64 gold eager vs replayed from a CUDA graph; page-locking a 4.2 GiB arena cold or after fallocate;
#  2. GPU tests: gold graphs, a build worker finds no CUDA device;
#  3. one harness run of v13 (scalar; three shapes and the check shapes): builds under the GPU masks, sandboxes
#     under seccomp, golds from graphs;
#  4. Nsight Compute on v18_chunk_parallel's three kernels (source at 2f54f1b) at medium and large.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
left() { echo $(( 585 - ($(date +%s) - T0) )); }
trap 'tar -czf $OUT/callN.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
cp ../callN.sh $R/command.sh
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; uname -r; python3 -c "import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda)"; cat /proc/loadavg; } > $R/env.txt 2>&1
cp ../v18.py /tmp/v18_chunk_parallel.py
( TORCH_EXTENSIONS_DIR=/tmp/v18ext nice -n 10 python3 -c "
import importlib.util as u; s=u.spec_from_file_location('v18','/tmp/v18_chunk_parallel.py'); m=u.module_from_spec(s); s.loader.exec_module(m); print('built')" > $R/v18_build.log 2>&1 ) &
timeout 150 python3 tools/gold_bench.py --out $R/gold_bench.json > $R/gold_bench.log 2>&1
echo "gold_bench rc=$? at $(( $(date +%s) - T0 )) s"; cat $R/gold_bench.log | cut -c1-400
timeout 120 python3 -m pytest -q -m gpu -rA tests/test_gold_graphs.py tests/test_spawn.py -p no:cacheprovider > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s"; tail -8 $R/gpu_tests.log
mkdir -p /tmp/hN/c && cp candidates/scalar_gated_delta/v13_seed_tc.py /tmp/hN/c/
printf 'build:\n  cache_dir: /tmp/hN/builds\nbaselines:\n  compile: false\n  compile_time_limit_s: 420\ntiming:\n  budget_s: 0.5\nevaluate:\n  time_limit_s: 300\n' > /tmp/hN/config.yaml
cp /tmp/hN/config.yaml $R/
timeout $(( $(left) - 150 )) python3 -m harness run problems/scalar_gated_delta.yaml --candidates /tmp/hN/c --results /tmp/hN/results --config /tmp/hN/config.yaml > $R/run.log 2>&1
echo "run rc=$? at $(( $(date +%s) - T0 )) s"; tail -22 $R/run.log
cp /tmp/hN/results/scalar_gated_delta/records.jsonl /tmp/hN/results/scalar_gated_delta/leaderboard.md $R/ 2>/dev/null
for d in /tmp/hN/builds/*/; do cp $d/build.log $R/build_$(basename $d).log 2>/dev/null; done
python3 - <<'PY' 2>&1 | tee $R/run_summary.txt
import json
for line in open("/tmp/hN/results/scalar_gated_delta/records.jsonl"):
    r = json.loads(line)
    if "shape" not in r: continue
    t = r.get("timing") or {}
    print(r.get("candidate"), r["shape"], r.get("status"), r.get("time_us"), r.get("reason", "")[:120],
          "seccomp:", (r.get("confinement") or {}).get("seccomp"), "gold:", t.get("judge_gold_graphs"),
          "costs:", t.get("judge_costs_s"))
PY
wait
cat $R/v18_build.log | tail -3
for shape in medium large; do
  [ $(left) -lt 60 ] && { echo "no time left for ncu $shape"; break; }
  TORCH_EXTENSIONS_DIR=/tmp/v18ext timeout $(( $(left) - 15 )) ncu --clock-control none --set full -k regex:cp[ABC]_kernel --launch-skip 3 --launch-count 3 -f -o $R/ncu_v18_$shape \
    python3 tools/profile_once.py --candidate /tmp/v18_chunk_parallel.py --problem problems/scalar_gated_delta.yaml --shape $shape --calls 2 > $R/ncu_v18_$shape.log 2>&1
  echo "ncu $shape rc=$? at $(( $(date +%s) - T0 )) s"
  ncu --import $R/ncu_v18_$shape.ncu-rep --page details > $R/ncu_v18_${shape}_details.txt 2>&1
  ncu --import $R/ncu_v18_$shape.ncu-rep --page raw --csv > $R/ncu_v18_${shape}_raw.csv 2>&1
  grep -E "^  cp|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Issue Slots Busy|No Eligible" $R/ncu_v18_${shape}_details.txt | head -40
done
echo "done at $(( $(date +%s) - T0 )) s"
