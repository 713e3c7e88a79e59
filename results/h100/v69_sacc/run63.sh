#!/usr/bin/env bash
# Session 33: sass_counts.txt (the device ptxas's HGMMA / DEPBAR per built file) added after the builds.
# Session 27: v63-family files (NEW) against v56_kuni and the float64 recurrence (compare53.py), probe63 on PROBE
# (probe56 on v56 when V56PROBE=1), then one harness run of v56 and the files that pass. Call 1: NEW=v63_tma,
# V56PROBE=1; call 2: NEW="v63b_tma v63c_tma", PROBE="v63_tma v63b_tma v63c_tma". Before the call: the make_v63*.py
# generators, then cp .gpu/<file>.py candidates/scalar_gated_delta/ for each file in NEW and PROBE. Call 5: BASE=v64_avt
# (the file the others are compared and timed beside), NEW=v66_vtprep.
set -u
export PYTHONUNBUFFERED=1
N=${RUN:-r1}
R=$OUT/$N; mkdir -p $R
snap() { tar czf $OUT/$N.tgz.tmp -C $OUT $N && mv $OUT/$N.tgz.tmp $OUT/$N.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; ls -la /usr/lib/x86_64-linux-gnu/libcuda* /usr/local/cuda/lib64/libcuda* /usr/local/cuda/lib64/stubs 2>&1; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
NEW=${NEW:-v63_tma}
PROBE=${PROBE:-$NEW}
BASE=${BASE:-v56_kuni}
FILES="$P/$BASE.py"; for n in $NEW; do FILES="$FILES $P/$n.py"; done
sha256sum $FILES $(for n in $PROBE; do echo $P/$n.py; done | sort -u) .gpu/probe56.py .gpu/probe63.py .gpu/compare53.py .gpu/make_v63*.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext63
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
[ "${V56PROBE:-0}" = 1 ] && ( timeout 300 python .gpu/probe56.py $P/v56_kuni.py > $R/probe56_v56_kuni.log 2>&1; echo "probe56 v56 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
for n in $PROBE; do
  ( timeout 300 python .gpu/probe63.py $P/$n.py > $R/probe63_$n.log 2>&1; echo "probe63 $n rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
done
wait
echo "builds and probes done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
# the device's own ptxas: HGMMA and DEPBAR (wgmma waits) in each built gd_wsh_kernel
CUO=$(ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || python -c "import triton, os; print(os.path.dirname(triton.__file__) + '/backends/nvidia/bin/cuobjdump')")
for so in $TORCH_EXTENSIONS_DIR/*/*.so; do
  $CUO -sass $so 2>/dev/null | awk '/Function :.*gd_wsh_kernel/{p=1;next} /Function :/{p=0} p' > /tmp/wsh.sass
  echo "$(basename $so): HGMMA $(grep -c HGMMA /tmp/wsh.sass) DEPBAR $(grep -c WARPGROUP.DEPBAR /tmp/wsh.sass) (cuobjdump $CUO)"
done | tee $R/sass_counts.txt
cat $R/timeline.txt
grep -il 'error' $R/build_* | head
for f in $R/build_*.log; do echo "== $f"; grep -i 'error\|spill\|lcuda' $f | head -8; done
for f in $R/probe*.log; do grep -v Warning $f | tail -18; done
snap
cands="$P/$BASE.py"
for n in $NEW; do
  timeout 170 python .gpu/compare53.py $n $BASE > $R/compare_$n.log 2>&1; rc=$?
  echo "compare $n rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -i 'graph replay\|FAILURES\|FAIL\|bitwise\|error' $R/compare_$n.log | head -12
  [ $rc -eq 0 ] && cands="$cands $P/$n.py"
done
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
echo "harness with $cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -14 $R/harness.log
cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null
snap
