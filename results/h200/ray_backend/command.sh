#!/usr/bin/env bash
# Issue 15 on one H200: the same candidates through the local backend and the Ray backend (a local Ray instance).
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/ray.tgz -C $R . ; ls -la $OUT' EXIT
mkdir -p /tmp/site && tar -xJf .ray/ray_site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site
python3 -c "import ray, sys; print('ray', ray.__version__, sys.version)" > $R/env.txt 2>&1 || { cat $R/env.txt; exit 1; }
cd .gpu/tree
nvidia-smi >> $R/env.txt; echo "commit $(cat COMMIT)" >> $R/env.txt
printf 'timing:\n  budget_s: 0.5\nbaselines:\n  compile: false\n  graph: false\nevaluate:\n  time_limit_s: 120\nbuild:\n  cache_dir: /tmp/gpu-builds\n  time_limit_s: 300\n' > $R/config.yaml
C=candidates/scalar_gated_delta/v13_seed_tc.py
timeout 150 python3 -m harness run problems/scalar_gated_delta.yaml --build-only --device cuda --config $R/config.yaml --results /tmp/prebuild --candidates $C > $R/prebuild.log 2>&1
echo "prebuilt at $(( $(date +%s) - T0 )) s"
for backend in local ray; do
  el=$(( $(date +%s) - T0 )); [ $el -gt 200 ] && { echo "skip $backend at $el s"; continue; }
  s=$(date +%s)
  timeout $(( 235 - el )) python3 -m harness run problems/scalar_gated_delta.yaml --shapes seed,medium --backend $backend --config $R/config.yaml --results $R/$backend --candidates $C > $R/$backend.log 2>&1
  echo "$backend rc=$? in $(( $(date +%s) - s )) s"; grep -A4 "leaderboard *$" $R/$backend.log | tail -3
done
