#!/bin/bash
# interference bench (wgbench2): build with nvcc and run; logs to $OUT/r3.
R=$OUT/r3; mkdir -p $R
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)
{ date -u; nvidia-smi; $NVCC --version; } > $R/env.txt 2>&1
cd .gpu && python3 wgbench2.py > $R/wgbench2.cu && cd ..
$NVCC -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/wgbench2 $R/wgbench2.cu > $R/build.log 2>&1
/tmp/wgbench2 > $R/wgbench2.log 2>&1
cat $R/wgbench2.log
sha256sum .gpu/wgbench.py .gpu/wgbench2.py $R/wgbench2.cu > $R/sha256.txt
