#!/usr/bin/env bash
# Issue 16: as callO (gold graphs on) but with judge.arena_ahead: never, to see whether the arena mapped ahead caused its twins and its D108 at seed.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/callP.tgz -C $R . ; ls -la $OUT' EXIT
cd .gpu/tree
cp ../callP.sh $R/command.sh
{ nvidia-smi; echo "commit $(cat COMMIT)"; nproc; uname -r; python3 -c "import torch,sys,os;print(sys.version);print(torch.__version__, torch.version.cuda);print('affinity', sorted(os.sched_getaffinity(0)))"; cat /proc/loadavg; } > $R/env.txt 2>&1
python3 -c "
import time;t=time.time();import torch;a=time.time();torch.zeros(1,device='cuda');b=time.time()
print(f'import torch {a-t:.2f} s, first CUDA tensor {b-a:.2f} s')" > $R/probe.txt 2>&1
cat $R/probe.txt
( while sleep 5; do F=/tmp/tp_p/results/scalar_gated_delta/records.jsonl; grep -q '"candidate": "ref:eager".*"status": "\(runtime_error\|crashed\|integrity\)"' $F 2>/dev/null && { echo "eager failed: stopping"; pkill -INT -f "m harness run"; break; }; [ "$(grep -c '"status": "\(runtime_error\|crashed\)"' $F 2>/dev/null)" -ge 3 ] 2>/dev/null && { echo "3 failed rows: stopping"; pkill -INT -f "m harness run"; break; }; done ) &
python3 tools/throughput.py --count 16 --out /tmp/tp_p --limit-s 470 --config-extra $'judge:\n  arena_ahead: never\n' > $R/throughput.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; tail -40 $R/throughput.log
cp /tmp/tp_p/throughput.* /tmp/tp_p/config.yaml /tmp/tp_p/run.log $R/ 2>/dev/null
cp /tmp/tp_p/results/scalar_gated_delta/records.jsonl /tmp/tp_p/results/scalar_gated_delta/leaderboard.md $R/ 2>/dev/null
mkdir -p $R/builds && for d in /tmp/tp_p/builds/*/; do n=$(basename $d); cp $d/built.json $R/builds/$n.json 2>/dev/null; done; tar -czf $OUT/builds.tgz -C $R builds && rm -rf $R/builds
L=$(( 590 - ($(date +%s) - T0) ))
