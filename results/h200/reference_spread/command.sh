#!/usr/bin/env bash
# Issue 13, call A: probe the eager reference's noise, then three scalar runs of the same code (eager + v13).
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callA.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
CACHE=/tmp/gpu-builds
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE | head -60; python3 -c "import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda)"; lscpu; cat /proc/loadavg; echo "commit $(cat COMMIT)"; } > $R/env.txt 2>&1
printf 'timing:\n  budget_s: 0.5\nbaselines:\n  compile: false\n  graph: false\nevaluate:\n  time_limit_s: 300\nbuild:\n  cache_dir: %s\n  time_limit_s: 400\n' $CACHE > $R/config.yaml
for p in scalar_gated_delta channel_gated_delta; do
  python3 -m harness run problems/$p.yaml --build-only --device cuda --config $R/config.yaml --results /tmp/prebuild \
    --candidates candidates/$p/v13_seed_tc.py > $R/prebuild_$p.log 2>&1 &
done
timeout 150 python3 ../probe_eager.py $PWD $R/probe.json > $R/probe.log 2>&1
echo "probe rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "wall median|MHz" $R/probe.log | cut -c1-150
wait
echo "prebuilt at $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do
  p=scalar_gated_delta
  el=$(( $(date +%s) - T0 ))
  [ $el -gt 480 ] && { echo "skip run $i at $el s"; continue; }
  echo "run $i $p start at $el s; load $(cat /proc/loadavg)"
  timeout $(( 575 - el )) python3 -m harness run problems/$p.yaml --fresh --config $R/config.yaml --results $R/results \
    --candidates candidates/$p/v13_seed_tc.py > $R/run${i}_$p.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 )) s"
  cp $R/results/$p/records.jsonl $R/run${i}_${p}_records.jsonl
  grep -A8 "leaderboard *$" $R/run${i}_$p.log | tail -6
done
