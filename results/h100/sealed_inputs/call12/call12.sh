#!/usr/bin/env bash
# Session 35, call 12: sealed inputs with one unsealing operation per request (the slots as views of one buffer):
# honest files (v69_sacc, v20_ws) and the stage-precompute cheat at every shape.
set -u
export PYTHONUNBUFFERED=1
R=$OUT; ROOT=$(pwd)
printf 'build:\n  cache_dir: /tmp/bnew\ncheck:\n  static: warn\nbaselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/new.yaml
P=$ROOT/candidates/scalar_gated_delta
FILES="$P/v69_sacc.py $P/v20_ws.py $ROOT/tests/adversarial/judge/cuda_stage_precompute.py"
{ nvidia-smi -L; sha256sum $FILES harness/*.py; } > $R/env.txt
T0=$(date +%s)
timeout 520 python -m harness run problems/scalar_gated_delta.yaml --config $R/new.yaml --results /tmp/rnew \
    --candidates $FILES > $R/run.log 2>&1; echo "run rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt
cp /tmp/rnew/scalar_gated_delta/leaderboard.md /tmp/rnew/scalar_gated_delta/records.jsonl $R/ 2>/dev/null
cat $R/timeline.txt; tail -12 $R/run.log
