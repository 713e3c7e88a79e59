#!/usr/bin/env bash
# Written in session 41, run in session 42 (seed_grouped/): receipts with small outputs digested together on CUDA (receipt.group_size).
# tools/receipt_bench.py beside the builds of v76b_tma5d, cuda_basic and cuda_reply_before_work, then three harness
# runs of them at seed (the corpus config: static rules warn, short timing): is the lone calls' check at seed back
# to its noise before receipts (v76b flagged D108 in one of three runs with per-output receipts)? ~250 s on a start.
set -u
export PYTHONUNBUFFERED=1
L=$OUT; R=/tmp/rseed
printf 'build:\n  cache_dir: /tmp/hbseed\n  time_limit_s: 900\ncheck:\n  static: warn\nevaluate:\n  time_limit_s: 60\ntiming:\n  budget_s: 0.2\n  warmup_ms: 5\n  min_iters: 5\nbaselines:\n  graph: false\n  compile: false\n' > $L/config.yaml
{ date -u; nvidia-smi -L; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; sha256sum harness/receipt.py harness/judge.py harness/sandbox.py; } > $L/env.txt 2>&1
A=tests/adversarial
mkdir -p /tmp/cseed && cp $A/judge/cuda_reply_before_work.py $A/honest/cuda_basic.py candidates/scalar_gated_delta/v76b_tma5d.py /tmp/cseed/
T0=$(date +%s)
( MAX_JOBS=8 timeout 200 python -m harness run problems/scalar_gated_delta.yaml --build-only --candidates /tmp/cseed --config $L/config.yaml --results $R/build > $L/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt ) &
python tools/receipt_bench.py --reps 20 > $L/receipt_bench.log 2>&1; echo "bench rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
wait
for run in 1 2 3; do
  timeout 100 python -m harness run problems/scalar_gated_delta.yaml --shapes seed --candidates /tmp/cseed --config $L/config.yaml --results $R/run$run --fresh > $L/run$run.log 2>&1
  echo "run $run rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
  cp $R/run$run/scalar_gated_delta/records.jsonl $L/run${run}_records.jsonl
done
cat $L/timeline.txt $L/receipt_bench.log; for run in 1 2 3; do tail -8 $L/run$run.log; done
