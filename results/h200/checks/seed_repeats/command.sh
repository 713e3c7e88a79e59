#!/usr/bin/env bash
# Honest v13/v16 at the seed shape, many times: how often does the judge flag an honest candidate, and by which check?
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callC.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
printf 'timing:\n  budget_s: 0.5\nbaselines:\n  compile: false\n  graph: false\nevaluate:\n  time_limit_s: 120\nbuild:\n  cache_dir: /tmp/gpu-builds\n  time_limit_s: 400\n' > $R/config.yaml
C="candidates/scalar_gated_delta/v13_seed_tc.py candidates/scalar_gated_delta/v16_lean_frags.py"
git -C /work/main show HEAD:candidates/scalar_gated_delta/v16_lean_frags.py > /dev/null 2>&1
python3 -m harness run problems/scalar_gated_delta.yaml --build-only --device cuda --config $R/config.yaml --results /tmp/prebuild --candidates $C > $R/prebuild.log 2>&1
echo "prebuilt at $(( $(date +%s) - T0 )) s"
i=0
while [ $(( $(date +%s) - T0 )) -lt 330 ]; do
  i=$((i+1))
  timeout 150 python3 -m harness run problems/scalar_gated_delta.yaml --fresh --shapes seed --config $R/config.yaml --results $R/results --candidates $C > $R/run$i.log 2>&1
  echo "run $i rc=$? at $(( $(date +%s) - T0 )) s: $(grep -E 'v13_seed_tc|v16_lean' $R/run$i.log | grep -E 'evaluate [0-9]' | sed 's/.*evaluate//' | tr '\n' ' ')"
done
cp $R/results/scalar_gated_delta/records.jsonl $R/records.jsonl
