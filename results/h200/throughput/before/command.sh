#!/usr/bin/env bash
# Issue 16, before: 16 compiled variants of v13 through one default harness run (three shapes), and where the time goes.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callG.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; python3 -c "import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
python3 -c "
import time;t=time.time();import torch;a=time.time();torch.zeros(1,device='cuda');b=time.time()
print(f'import torch {a-t:.2f} s, first CUDA tensor {b-a:.2f} s')" > $R/probe.txt 2>&1
python3 -c "
import time;t=time.time();import torch;from torch.utils import cpp_extension;a=time.time();print(f'import torch+cpp_extension {a-t:.2f} s')" >> $R/probe.txt 2>&1
cat $R/probe.txt
python3 tools/throughput.py --count 16 --out /tmp/tp_before --limit-s 470 > $R/before.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; cat $R/before.log | tail -30
mkdir -p $R/before && cp /tmp/tp_before/throughput.* /tmp/tp_before/config.yaml /tmp/tp_before/run.log $R/before/
cp -r /tmp/tp_before/results $R/before/results
mkdir -p $R/before/build_logs && for d in /tmp/tp_before/builds/*/; do n=$(basename $d); cp $d/build.log $R/before/build_logs/$n.log 2>/dev/null; cp $d/built.json $R/before/build_logs/$n.json 2>/dev/null; done
