#!/usr/bin/env bash
# Session 35, call 9: probe74 --lean on v69, v74 and the v75 files (make_v75.py), then one harness run of v69 and the
# v75 files that pass compare53 (run63.sh). The harness-side builds run beside the probe builds; no two processes
# use the GPU at once (the probes run one at a time and finish before run63 starts).
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
V75="v75a_tmaqk v75b_tmaqk v75c_nofence"
for n in $V75; do cp .gpu/$n.py $P/; done
mkdir -p $OUT/probes
sha256sum $P/v69_sacc.py .gpu/v74_async.py .gpu/v75*.py .gpu/probe74.py .gpu/run63.sh .gpu/compare53.py > $OUT/sha256.txt
nvidia-smi > $OUT/env.txt 2>&1
T0=$(date +%s)
for f in $P/v69_sacc.py .gpu/v74_async.py $(for n in $V75; do echo .gpu/$n.py; done); do
  ( TORCH_EXTENSIONS_DIR=/tmp/ext74 timeout 240 python .gpu/probe74.py $f --lean > $OUT/probes/probe74_$(basename $f .py).log 2>&1
    echo "probe $f rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/probes/timeline.txt ) &
done
for n in v69_sacc $V75; do   # run63's builds, cached for its compare53 (no GPU use while importing)
  ( TORCH_EXTENSIONS_DIR=/tmp/ext63 python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$P/$n.py'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $OUT/probes/prebuild_$n.log 2>&1
    echo "prebuild $n rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/probes/timeline.txt ) &
done
wait
cat $OUT/probes/timeline.txt
for f in $OUT/probes/probe74_*.log; do grep -v Warn $f | tail -18; done
RUN=call9 BASE=v69_sacc NEW="$V75" PROBE=" " LIMIT=$(( 560 - ($(date +%s) - T0) )) bash .gpu/run63.sh
tar czf $OUT/probes.tgz -C $OUT probes
