#!/usr/bin/env bash
# Issue 17: v18_chunk_parallel against v13 in one harness run (three shapes, with the check shapes), then
# Nsight Compute on v18's kernels at medium and large (reduced sections), from the harness's own build.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callM.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
cp ../callM.sh $R/command.sh
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; python3 -c "import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
mkdir -p /tmp/v18c && cp candidates/scalar_gated_delta/v13_seed_tc.py candidates/scalar_gated_delta/v18_chunk_parallel.py /tmp/v18c/
printf 'build:\n  cache_dir: /tmp/v18run/builds\nbaselines:\n  compile: false\n' > /tmp/v18run.yaml
cat configs/h200_session.yaml >> /tmp/v18run.yaml
( while sleep 5; do grep -q '"candidate": "ref:eager".*"status": "\(runtime_error\|crashed\|integrity\)"' /tmp/v18run/results/scalar_gated_delta/records.jsonl 2>/dev/null && { echo "eager failed: stopping"; pkill -INT -f "m harness run"; break; }; done ) &
timeout 300 python3 -m harness run problems/scalar_gated_delta.yaml --candidates /tmp/v18c --results /tmp/v18run/results --config /tmp/v18run.yaml > $R/run.log 2>&1
echo "run rc=$? at $(( $(date +%s) - T0 )) s"; tail -25 $R/run.log
cp /tmp/v18run/results/scalar_gated_delta/records.jsonl /tmp/v18run/results/scalar_gated_delta/leaderboard.md $R/ 2>/dev/null
for d in /tmp/v18run/builds/*/; do cp $d/build.log $R/build_$(basename $d).log 2>/dev/null; done
SO=$(find /tmp/v18run/builds -name '*v18*.so' | head -1); echo "so: $SO"
if grep -q '"candidate": "v18_chunk_parallel".*"shape": "medium".*"status": "ok"' $R/records.jsonl 2>/dev/null && [ -n "$SO" ] && [ $(( $(date +%s) - T0 )) -lt 240 ]; then
  export TORCH_EXTENSIONS_DIR=$(dirname $(dirname $SO))
  for shape in medium; do
    timeout 75 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      --launch-skip 3 --launch-count 4 -f -o $R/ncu_$shape \
      python3 tools/profile_once.py --candidate candidates/scalar_gated_delta/v18_chunk_parallel.py --problem problems/scalar_gated_delta.yaml --shape $shape --calls 3 > $R/ncu_$shape.log 2>&1
    echo "ncu $shape rc=$? at $(( $(date +%s) - T0 )) s"
    ncu --import $R/ncu_$shape.ncu-rep --page details > $R/ncu_${shape}_details.txt 2>&1
    grep -E "^  [a-z_]|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Issue Slots Busy|No Eligible" $R/ncu_${shape}_details.txt | head -60
  done
fi
echo "done at $(( $(date +%s) - T0 )) s"
