#!/usr/bin/env bash
# Session 40: the v78 timing ablations (make_v78.py: no vote; no A) beside v76b_tma5d and v77_tmaspread, all by
# probe76 bare on one machine (events, chunk cycles, the consumers' barrier wait), and v76b by probe76 reg (the
# prep's phases on this machine). Builds in parallel, timed one at a time (probe76's lock). No harness run: the
# ablations' outputs are wrong. Before: python results/h100/v69_sacc/make_v77.py && python results/h100/v69_sacc/make_v78.py
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/call_v78; mkdir -p $L
snap() { tar czf $OUT/call_v78.tgz.tmp -C $OUT call_v78 && mv $OUT/call_v78.tgz.tmp $OUT/call_v78.tgz; }
trap 'snap; rm -rf $L' EXIT
mkdir -p /tmp/v78 && cp $P/v76b_tma5d.py .gpu/v77_tmaspread.py .gpu/v78a_novote.py .gpu/v78b_noa.py /tmp/v78/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $L/env.txt 2>&1
sha256sum /tmp/v78/*.py $R/probe76.py $R/make_v78.py > $L/sha256.txt
T0=$(date +%s)
for job in v76b_tma5d:bare v76b_tma5d:reg v77_tmaspread:bare v78a_novote:bare v78b_noa:bare; do
  n=${job%%:*}; m=${job##*:}
  ( TORCH_EXTENSIONS_DIR=/tmp/ext78 timeout 200 python $R/probe76.py /tmp/v78/$n.py --modes=$m > $L/probe_${n}_$m.log 2>&1
    echo "probe $n $m rc=$? at $(( $(date +%s) - T0 )) s" >> $L/timeline.txt ) &
done
wait
cat $L/timeline.txt
for f in $L/probe_*.log; do grep -v -i warn $f | grep -v "^ *$" | tail -18; done
