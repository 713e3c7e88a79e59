#!/usr/bin/env bash
# Session 36, written for the next call (not run: no machine came): probe76 on v69 (plain), v76a_gbearly, v76b_tma5d and v76c_gbtmaqk (bare, reg) at
# large (make_v76.py), then run63.sh: compare53 of the v76 files against v69 and one harness run of v69 and those that pass.
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
V76="v76a_gbearly v76b_tma5d v76c_gbtmaqk"
for n in $V76; do cp .gpu/$n.py $P/; done
mkdir -p $OUT/probes
sha256sum $P/v69_sacc.py .gpu/v74_async.py $(for n in $V76; do echo .gpu/$n.py; done) $R/probe76.py .gpu/run63.sh .gpu/compare53.py > $OUT/probes/sha256.txt
T0=$(date +%s)
jobs_for() { for m in $2; do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext76 timeout 300 python $R/probe76.py $1 --modes=$m > $OUT/probes/$(basename $1 .py)_$m.log 2>&1
    echo "probe $(basename $1 .py) $m rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/probes/timeline.txt ) &
done; }
jobs_for $P/v69_sacc.py plain
for n in $V76; do jobs_for .gpu/$n.py "bare reg"; done
for n in v69_sacc $V76; do   # run63's builds, cached for its compare53 (no GPU use while importing)
  ( TORCH_EXTENSIONS_DIR=/tmp/ext63 python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$P/$n.py'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $OUT/probes/prebuild_$n.log 2>&1
    echo "prebuild $n rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/probes/timeline.txt ) &
done
wait
cat $OUT/probes/timeline.txt
for f in $OUT/probes/*_plain.log $OUT/probes/*_bare.log $OUT/probes/*_reg.log; do grep -v -i warn $f | tail -18; done
tar czf $OUT/probes.tgz -C $OUT probes && rm -rf $OUT/probes
RUN=call_v76 BASE=v69_sacc NEW="$V76" PROBE=" " LIMIT=$(( 420 - ($(date +%s) - T0) )) bash .gpu/run63.sh
