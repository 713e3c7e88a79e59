#!/usr/bin/env bash
# Session 28, call 3: Nsight Compute on v67_iter and v68c_both at large (which pipes the chunk keeps busy, and why
# warps stall: the Q S0 phase stayed ~4,050 cycles whatever its wait structure), then one harness run of v68a_apair
# (flagged D108 in call 2) and v68c_both. Before the call: make_v68.py, then cp .gpu/v68?_*.py candidates/scalar_gated_delta/.
set -u
export PYTHONUNBUFFERED=1
N=${RUN:-r3}
R=$OUT/$N; mkdir -p $R
snap() { tar czf $OUT/$N.tgz.tmp --exclude="*.ncu-rep" -C $OUT $N && mv $OUT/$N.tgz.tmp $OUT/$N.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; which ncu; ncu --version; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
FILES="$P/v67_iter.py $P/v68a_apair.py $P/v68c_both.py"
sha256sum $FILES .gpu/drive.py .gpu/make_v68.py .gpu/run68.sh > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext68
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
M='regex:^sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active$,regex:^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,smsp__inst_executed.sum,gpu__time_duration.sum'
for n in v67_iter v68c_both; do
  timeout 150 ncu --clock-control none --metrics "$M" -k regex:gd_wsh_kernel --launch-skip 2 --launch-count 1 \
    python .gpu/drive.py $P/$n.py large > $R/ncu_pipes_$n.txt 2>&1
  echo "ncu $n rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -E "pipe_|stalled|issue_active|cycles_elapsed|inst_executed.sum|duration" $R/ncu_pipes_$n.txt | sort -k3 -n -r | head -60
done
snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n' > $R/config.yaml
left=$(( ${LIMIT:-520} - ($(date +%s) - T0) ))
echo "harness with v68a_apair v68c_both, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v68a_apair.py $P/v68c_both.py \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results/scalar_gated_delta $R/records 2>/dev/null
snap
