#!/usr/bin/env bash
# Session 35, call 13: the committed sealed inputs (slots as views of one buffer) against the honest CUDA files of
# the judge's corpus and the cheats that look for staged sets or cache by device data, seed and medium, with the
# corpus test's settings.
set -u
export PYTHONUNBUFFERED=1
R=$OUT; ROOT=$(pwd)
printf 'build:\n  cache_dir: /tmp/b13\n  time_limit_s: 900\ncheck:\n  static: warn\nevaluate:\n  time_limit_s: 60\ntiming:\n  budget_s: 0.2\n  warmup_ms: 5\n  min_iters: 5\nbaselines:\n  graph: false\n  compile: false\n' > $R/corpus.yaml
J=$ROOT/tests/adversarial
FILES="$(ls $J/judge_honest/cuda_*.py) $J/honest/cuda_basic.py $J/judge/cuda_batch_staged_slots.py $J/judge/cuda_device_fingerprint_cache.py $J/judge/cuda_persistent_output.py $J/judge/cuda_stage_precompute.py"
{ nvidia-smi -L; git log -1 --format=%H 2>/dev/null; sha256sum $FILES harness/*.py; } > $R/env.txt
T0=$(date +%s)
timeout 280 python -m harness run problems/scalar_gated_delta.yaml --shapes seed,medium --config $R/corpus.yaml \
    --results /tmp/r13 --candidates $FILES > $R/run.log 2>&1; echo "run rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt
cp /tmp/r13/scalar_gated_delta/leaderboard.md /tmp/r13/scalar_gated_delta/records.jsonl $R/ 2>/dev/null
cat $R/timeline.txt; tail -16 $R/run.log
