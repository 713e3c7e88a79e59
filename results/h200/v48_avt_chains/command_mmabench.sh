#!/usr/bin/env bash
# Session 22, call 5: mmabench.py alone (its first run, in call 4, failed to compile: a pointer type).
mkdir -p $OUT && { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv; timeout 200 python .gpu/mmabench.py; } > $OUT/mmabench.log 2>&1
