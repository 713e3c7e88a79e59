#!/usr/bin/env bash
# Issue 15: 10 copies of v13 at seed through the local backend, then through Ray (one node, the GPU), a Ray worker
# now serving many evaluations: the GPU's idle time between two evaluations, statuses and times side by side.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'cp -r /tmp/rs_work/config.yaml $R/ 2>/dev/null; tar -czf $R/results.tgz -C /tmp/rs_work results-1 results-local 2>/dev/null; tar -czf $OUT/callF.tgz -C $R . ; ls -la $OUT' EXIT
mkdir -p /tmp/site && tar -xJf .ray/ray_site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site
cd .gpu/tree
nvidia-smi > $R/env.txt; echo "commit $(cat COMMIT)" >> $R/env.txt; nproc >> $R/env.txt
timeout 560 python3 tools/ray_scale.py --device cuda --honest candidates/scalar_gated_delta/v13_seed_tc.py --count 10 \
  --nodes 1 --gpus-per-node 1 --cpus-per-node 16 --local --budget 0.5 --out $R/scale --work /tmp/rs_work > $R/scale.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; tail -16 $R/scale.log
