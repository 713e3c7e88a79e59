#!/usr/bin/env bash
# Issue 15 on one H200, after packed builds keep their times to the ns: 12 copies of v13 at seed through the local
# backend, then through Ray (one node with the GPU): overhead per candidate, statuses and times side by side.
# The same 24 honest seed evaluations show how often the lone-call check calls its twin sandbox.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'cp -r /tmp/rs_work/results-* /tmp/rs_work/config.yaml $R/ 2>/dev/null; mkdir -p $R/node_logs; cp -r /tmp/rs_work/nodes1/node0/logs $R/node_logs/ 2>/dev/null; tar -czf $OUT/callD.tgz -C $R . ; ls -la $OUT' EXIT
mkdir -p /tmp/site && tar -xJf .ray/ray_site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site
cd .gpu/tree
nvidia-smi > $R/env.txt; echo "commit $(cat COMMIT)" >> $R/env.txt; nproc >> $R/env.txt
timeout 550 python3 tools/ray_scale.py --device cuda --honest candidates/scalar_gated_delta/v13_seed_tc.py --count 12 \
  --nodes 1 --gpus-per-node 1 --cpus-per-node 16 --local --budget 0.5 --out $R/scale --work /tmp/rs_work > $R/scale.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"
tail -22 $R/scale.log
