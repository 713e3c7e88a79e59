#!/usr/bin/env bash
# Session 34, call 7: the judge with warmed lone calls (this tree), v69_sacc and v74c_pre (both refused by D108 before).
set -u
export PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
snap() { cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null; rm -f $R/records/records.jsonl.lock; tar czf $OUT/c7.tgz.tmp -C $OUT c7 && mv $OUT/c7.tgz.tmp $OUT/c7.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; git log --oneline | head -1; git diff --stat; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
sha256sum $P/v69_sacc.py $P/v74c_pre.py harness/judge.py > $R/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
timeout 400 python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v69_sacc.py $P/v74c_pre.py \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$?" >> $R/harness.log
tail -8 $R/harness.log
python - <<'PY'
import json
for line in open('/tmp/results/scalar_gated_delta/records.jsonl'):
    d = json.loads(line); t = d.get('timing') or {}
    if 'judge_lone_us' in t:
        print(d['candidate'], d['shape'], d['status'], 'lone', t['judge_lone_us'], 'cal', t.get('judge_lone_overhead_us'),
              'lat', t.get('judge_latency_us'), 'allowed', t.get('judge_lone_allowed_us'), 'twin', t.get('judge_twin_us'),
              'second', t.get('judge_second_look'))
PY
