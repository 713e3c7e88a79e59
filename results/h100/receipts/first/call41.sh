#!/usr/bin/env bash
# Session 41: burst receipts on the GPU (a corpus subset at seed+medium, v76b_tma5d at large with the default
# timing) and the v78 probes. Builds overlap the v78 probes; GPU timing never overlaps.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/call41; mkdir -p $L
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; git status --short; } > $L/env.txt 2>&1
A=tests/adversarial
mkdir -p /tmp/c41 && cp $A/judge/cuda_reply_before_work.py $A/judge/cuda_patch_timing_module.py $A/judge/cuda_event_record_patch.py $A/honest/cuda_basic.py candidates/scalar_gated_delta/v76b_tma5d.py /tmp/c41/
T0=$(date +%s)
( MAX_JOBS=4 timeout 250 python -m harness run problems/scalar_gated_delta.yaml --build-only --candidates /tmp/c41 --config .gpu/receipts_corpus.yaml --results $L/build > $L/build.log 2>&1; echo "build rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt ) &
( timeout 250 bash results/h100/v69_sacc/next_call_v78.sh > $L/v78.log 2>&1; echo "v78 rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt ) &
wait
timeout 150 python -m harness run problems/scalar_gated_delta.yaml --shapes seed,medium --candidates /tmp/c41 --config .gpu/receipts_corpus.yaml --results $L/corpus > $L/corpus.log 2>&1
echo "corpus rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
mkdir -p /tmp/c41l && cp /tmp/c41/v76b_tma5d.py /tmp/c41l/
timeout 120 python -m harness run problems/scalar_gated_delta.yaml --shapes large --candidates /tmp/c41l --config .gpu/receipts_large.yaml --results $L/large > $L/large.log 2>&1
echo "large rc=$? at $(( $(date +%s) - T0 ))" >> $L/timeline.txt
cat $L/timeline.txt; tail -25 $L/corpus.log; tail -12 $L/large.log; tail -60 $L/v78.log
