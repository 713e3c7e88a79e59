#!/usr/bin/env bash
# Session 38: the lean form of next_call_v77.sh for a session short of device time: no probes, one harness run of
# v76b_tma5d (the catalogue's file: the same machine's baseline) beside v77_tmaspread. Before: make_v77.py.
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
L=$OUT/call_v77; mkdir -p $L
snap() { tar czf $OUT/call_v77.tgz.tmp -C $OUT call_v77 && mv $OUT/call_v77.tgz.tmp $OUT/call_v77.tgz; }
trap 'snap; rm -rf $L' EXIT
cp .gpu/v77_tmaspread.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $L/env.txt 2>&1
sha256sum $P/v76b_tma5d.py $P/v77_tmaspread.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $L/config.yaml
T0=$(date +%s)
MAX_JOBS=8 timeout ${LIMIT:-200} python -m harness run problems/scalar_gated_delta.yaml \
  --candidates $P/v76b_tma5d.py $P/v77_tmaspread.py --results /tmp/results --config $L/config.yaml > $L/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt
tail -14 $L/harness.log
cp -r /tmp/results/scalar_gated_delta $L/records 2>/dev/null
