#!/bin/bash
# wgmma cost model bench: build (nvcc, sm_90a) and run; logs to $OUT/r1.
set -x
R=$OUT/r1; mkdir -p $R
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK; $NVCC --version; } > $R/env.txt 2>&1
python3 .gpu/wgbench.py > $R/wgbench.cu
$NVCC -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/wgbench $R/wgbench.cu > $R/build.log 2>&1
/tmp/wgbench > $R/wgbench.log 2>&1
/tmp/wgbench > $R/wgbench_repeat.log 2>&1
cat $R/wgbench.log
sha256sum .gpu/wgbench.py $R/wgbench.cu > $R/sha256.txt
