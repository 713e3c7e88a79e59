#!/usr/bin/env bash
# Session 36, written for the next call (not run: no machine came), the short form: probe76 on v69 (plain), v74 (bare) and on v76a_gbearly, v76b_tma5d and
# v76c_gbtmaqk (bare) at large (make_v76.py). No compare53, no harness run.
set -u
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/ext76
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
V76="v76a_gbearly v76b_tma5d v76c_gbtmaqk"
mkdir -p $OUT/probes
sha256sum $P/v69_sacc.py .gpu/v74_async.py $(for n in $V76; do echo .gpu/$n.py; done) $R/probe76.py > $OUT/probes/sha256.txt
nvidia-smi > $OUT/probes/env.txt 2>&1
T0=$(date +%s)
jobs_for() { for m in $2; do
  ( timeout 165 python $R/probe76.py $1 --modes=$m > $OUT/probes/$(basename $1 .py)_$m.log 2>&1
    echo "probe $(basename $1 .py) $m rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/probes/timeline.txt ) &
done; }
jobs_for $P/v69_sacc.py plain
jobs_for .gpu/v74_async.py bare
for n in $V76; do jobs_for .gpu/$n.py bare; done
wait
cat $OUT/probes/timeline.txt
for f in $OUT/probes/*_plain.log $OUT/probes/*_bare.log $OUT/probes/*_reg.log; do grep -v -i warn $f | tail -18; done
rm -f $R/probe76_v*.py
tar czf $OUT/probes.tgz -C $OUT probes && rm -rf $OUT/probes
