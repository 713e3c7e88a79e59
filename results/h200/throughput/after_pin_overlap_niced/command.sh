#!/usr/bin/env bash
# Issue 16, after pin overlap (7286ae4), niced compiles (75fc14c) and sandbox-first start (7b929e9): 16 compiled variants of v13 through one default harness run (three shapes).
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callK.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
cp ../callK.sh $R/command.sh
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; uname -r; python3 -c "import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
python3 -c "
import time;t=time.time();import torch;a=time.time();torch.zeros(1,device='cuda');b=time.time()
print(f'import torch {a-t:.2f} s, first CUDA tensor {b-a:.2f} s')" > $R/probe.txt 2>&1
cat $R/probe.txt
( while sleep 5; do grep -q '"candidate": "ref:eager".*"status": "\(runtime_error\|crashed\|integrity\)"' /tmp/tp_k/results/scalar_gated_delta/records.jsonl 2>/dev/null && { echo "eager failed: stopping"; pkill -INT -f "m harness run"; break; }; done ) &
python3 tools/throughput.py --count 16 --out /tmp/tp_k --limit-s 470 > $R/throughput.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; tail -40 $R/throughput.log
cp /tmp/tp_k/throughput.* /tmp/tp_k/config.yaml /tmp/tp_k/run.log $R/ 2>/dev/null
cp /tmp/tp_k/results/scalar_gated_delta/records.jsonl /tmp/tp_k/results/scalar_gated_delta/leaderboard.md $R/ 2>/dev/null
mkdir -p $R/builds && for d in /tmp/tp_k/builds/*/; do n=$(basename $d); cp $d/built.json $R/builds/$n.json 2>/dev/null; done
