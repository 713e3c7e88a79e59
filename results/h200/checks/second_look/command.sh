#!/usr/bin/env bash
# D108's second look against the cheat the lone calls catch (tests/adversarial/judge/cuda_batch_staged_slots.py:
# work for the staged slots done ahead, so a lone call is slow): it must stay integrity D108 after the second
# look. v13 beside it, honest. Seed and medium, static rules as warnings (as the judge corpus runs them).
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callR.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
cp ../callR.sh $R/command.sh
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; } > $R/env.txt 2>&1
mkdir -p /tmp/hr/c && cp tests/adversarial/judge/cuda_batch_staged_slots.py candidates/scalar_gated_delta/v13_seed_tc.py /tmp/hr/c/
printf 'build:\n  cache_dir: /tmp/hr/builds\nbaselines:\n  compile: false\n  graph: false\ncheck:\n  static: warn\ntiming:\n  budget_s: 0.5\nevaluate:\n  time_limit_s: 150\n' > $R/config.yaml
timeout 220 python3 -m harness run problems/scalar_gated_delta.yaml --shapes seed,medium --candidates /tmp/hr/c --results /tmp/hr/results --config $R/config.yaml > $R/run.log 2>&1
echo "run rc=$? at $(( $(date +%s) - T0 )) s"; tail -12 $R/run.log
cp /tmp/hr/results/scalar_gated_delta/records.jsonl $R/ 2>/dev/null
python3 - <<'PY' 2>&1 | tee $R/second_looks.txt
import json
for line in open("/tmp/hr/results/scalar_gated_delta/records.jsonl"):
    r = json.loads(line); t = r.get("timing") or {}
    print(r["candidate"], r["shape"], r["status"], r.get("check", ""), (r.get("reason") or "")[:100], "| second look:", json.dumps(t.get("judge_second_look")))
PY
