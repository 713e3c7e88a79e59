#!/usr/bin/env bash
# Session 27, call 4: v65_pstate (v64 with the state kept as S / P) against v56_kuni and the float64 recurrence
# (compare53.py), probe63 on v65, one harness run of v56, v64 and the files that pass, then Nsight Compute's
# instruction count, issue activity and duration of gd_wsh_kernel at large for v56, v64 and v65.
# Before the call: the make_v6*.py generators, then cp .gpu/v64_avt.py .gpu/v65_pstate.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
N=${RUN:-r4}
R=$OUT/$N; mkdir -p $R
snap() { tar czf $OUT/$N.tgz.tmp --exclude="*.ncu-rep" -C $OUT $N && mv $OUT/$N.tgz.tmp $OUT/$N.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; which ncu; ncu --version; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v56_kuni.py $P/v64_avt.py $P/v65_pstate.py"
sha256sum $FILES .gpu/probe63.py .gpu/compare53.py .gpu/drive.py .gpu/make_v6*.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext64
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
( timeout 300 python .gpu/probe63.py $P/v65_pstate.py > $R/probe63_v65_pstate.log 2>&1; echo "probe63 v65 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
wait
echo "builds and probe done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
for f in $R/build_*.log; do echo "== $f"; grep -i 'error\|spill' $f | head -4; done
grep -v Warning $R/probe63_v65_pstate.log | tail -18
snap
cands="$P/v56_kuni.py $P/v64_avt.py"
timeout 150 python .gpu/compare53.py v65_pstate v56_kuni > $R/compare_v65_pstate.log 2>&1; rc=$?
echo "compare v65 rc=$rc at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|FAIL \|error' $R/compare_v65_pstate.log | head -8
[ $rc -eq 0 ] && cands="$cands $P/v65_pstate.py"
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-400} - ($(date +%s) - T0) ))
echo "harness with $cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null
snap
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
for n in v56_kuni v64_avt v65_pstate; do
  timeout 120 ncu --clock-control none --metrics $M -k regex:gd_wsh_kernel --launch-skip 2 --launch-count 1 \
    python .gpu/drive.py $P/$n.py large > $R/ncu_$n.txt 2>&1
  echo "ncu $n rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -E "inst_executed|issue_active|cycles_elapsed|duration|tensor|wavefronts" $R/ncu_$n.txt
done
snap
