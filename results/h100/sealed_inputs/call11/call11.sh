#!/usr/bin/env bash
# Session 35, call 11: the stage-precompute cheat against the judge before sealed inputs (HEAD's harness, in
# .gpu/oldh) and after (the working tree), plus v69 at every shape after, to see honest timing unchanged.
set -u
export PYTHONUNBUFFERED=1
R=$OUT; ROOT=$(pwd)
printf 'build:\n  cache_dir: %s\ncheck:\n  static: warn\nbaselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' /tmp/bnew > $R/new.yaml
printf 'build:\n  cache_dir: %s\ncheck:\n  static: warn\nbaselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' /tmp/bold > $R/old.yaml
CHEAT=$ROOT/tests/adversarial/judge/cuda_stage_precompute.py
BASIC=$ROOT/tests/adversarial/honest/cuda_basic.py
V69=$ROOT/candidates/scalar_gated_delta/v69_sacc.py
sha256sum $CHEAT $BASIC $V69 harness/*.py > $R/sha256.txt
T0=$(date +%s)
( python -m harness run problems/scalar_gated_delta.yaml --build-only --config $R/new.yaml --results /tmp/rbuild \
    --candidates $V69 $CHEAT > $R/new_build.log 2>&1; echo "new build rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
( cd .gpu/oldh && python -m harness run problems/scalar_gated_delta.yaml --shapes seed,medium --config $R/old.yaml \
    --results /tmp/rold --candidates $CHEAT $BASIC > $R/old_run.log 2>&1; echo "old run rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt )
wait
python -m harness run problems/scalar_gated_delta.yaml --config $R/new.yaml --results /tmp/rnew \
    --candidates $V69 $CHEAT > $R/new_run.log 2>&1; echo "new run rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt
mkdir -p $R/old $R/new
cp /tmp/rold/scalar_gated_delta/{leaderboard.md,records.jsonl} $R/old/ 2>/dev/null
cp /tmp/rnew/scalar_gated_delta/{leaderboard.md,records.jsonl} $R/new/ 2>/dev/null
cat $R/timeline.txt; tail -9 $R/old_run.log; tail -9 $R/new_run.log
