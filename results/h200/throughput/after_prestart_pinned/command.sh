#!/usr/bin/env bash
# Issue 16, after (prestart + pinned arena): 16 compiled variants of v13 through one default harness run (three shapes), and where the time goes.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callH.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; python3 -c "import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
python3 -c "
import time;t=time.time();import torch;a=time.time();torch.zeros(1,device='cuda');b=time.time()
print(f'import torch {a-t:.2f} s, first CUDA tensor {b-a:.2f} s')" > $R/probe.txt 2>&1
python3 -c "
import time;t=time.time();import torch;from torch.utils import cpp_extension;a=time.time();print(f'import torch+cpp_extension {a-t:.2f} s')" >> $R/probe.txt 2>&1
cat $R/probe.txt
# stop early if the reference itself cannot be evaluated (a broken harness would burn the whole window)
( while sleep 5; do grep -q '"candidate": "ref:eager".*"status": "\(runtime_error\|crashed\|integrity\)"' /tmp/tp_after/results/scalar_gated_delta/records.jsonl 2>/dev/null && { echo "eager failed: stopping"; pkill -INT -f "m harness run"; break; }; done ) &
python3 tools/throughput.py --count 16 --out /tmp/tp_after --limit-s 470 > $R/after.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; cat $R/after.log | tail -30
mkdir -p $R/after && cp /tmp/tp_after/throughput.* /tmp/tp_after/config.yaml /tmp/tp_after/run.log $R/after/
cp -r /tmp/tp_after/results $R/after/results
mkdir -p $R/after/build_logs && for d in /tmp/tp_after/builds/*/; do n=$(basename $d); cp $d/build.log $R/after/build_logs/$n.log 2>/dev/null; cp $d/built.json $R/after/build_logs/$n.json 2>/dev/null; cat $d/evaluate-*.log > $R/after/build_logs/$n.evaluate.log 2>/dev/null; done
