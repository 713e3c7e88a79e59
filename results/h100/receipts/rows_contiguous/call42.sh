#!/usr/bin/env bash
# Session 41, second call: receipts with the row-sum digest. receipt_bench beside the builds, then the corpus subset
# at seed+medium and v76b_tma5d at large (as call41). Records copied flat into $OUT.
set -u
export PYTHONUNBUFFERED=1
L=$OUT; R=/tmp/r42
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git status --short; sha256sum harness/receipt.py harness/judge.py harness/sandbox.py; } > $L/env.txt 2>&1
A=tests/adversarial
mkdir -p /tmp/c42 /tmp/c42l && cp $A/judge/cuda_reply_before_work.py $A/judge/cuda_patch_timing_module.py $A/judge/cuda_event_record_patch.py $A/honest/cuda_basic.py candidates/scalar_gated_delta/v76b_tma5d.py /tmp/c42/ && cp candidates/scalar_gated_delta/v76b_tma5d.py /tmp/c42l/
T0=$(date +%s)
( MAX_JOBS=8 timeout 200 python -m harness run problems/scalar_gated_delta.yaml --build-only --candidates /tmp/c42 --config .gpu/receipts_corpus.yaml --results $R/build > $L/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt ) &
python tools/receipt_bench.py --reps 20 > $L/receipt_bench.log 2>&1; echo "bench rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
wait
timeout 150 python -m harness run problems/scalar_gated_delta.yaml --shapes seed,medium --candidates /tmp/c42 --config .gpu/receipts_corpus.yaml --results $R/corpus > $L/corpus.log 2>&1
echo "corpus rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
cp $R/corpus/scalar_gated_delta/records.jsonl $L/corpus_records.jsonl
timeout 120 python -m harness run problems/scalar_gated_delta.yaml --shapes large --candidates /tmp/c42l --config .gpu/receipts_large.yaml --results $R/large > $L/large.log 2>&1
echo "large rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
cp $R/large/scalar_gated_delta/records.jsonl $L/large_records.jsonl
cat $L/timeline.txt $L/receipt_bench.log; tail -14 $L/corpus.log; tail -7 $L/large.log
