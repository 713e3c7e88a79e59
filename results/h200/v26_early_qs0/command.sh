#!/usr/bin/env bash
# Session 18, GPU call 1: v26_early_qs0 against v25_split_issue. Builds (4 files + 2 phase probes + a -lcuda link
# probe, in parallel), the comparison over shapes and gate cases with graph-replay times at large, the phase probe of
# v26, a harness run per problem where v26's graph replay at large beat v25's.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
trap 'tar czf $OUT/r.tgz -C $OUT r; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
sha256sum candidates/*/v25_split_issue.py candidates/*/v26_early_qs0.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext26
T0=$(date +%s)
python .gpu/phase_probe.py --dry candidates/scalar_gated_delta/v26_early_qs0.py candidates/channel_gated_delta/v26_early_qs0.py > $R/logs/dry.log 2>&1
(timeout 200 python .gpu/lcuda_probe.py > $R/logs/lcuda_probe.log 2>&1; echo "lcuda rc=$?" >> $R/logs/lcuda_probe.log) &
for f in candidates/scalar_gated_delta/v25_split_issue.py candidates/channel_gated_delta/v25_split_issue.py candidates/scalar_gated_delta/v26_early_qs0.py \
         candidates/channel_gated_delta/v26_early_qs0.py .gpu/probe_v26_sgd.py .gpu/probe_v26_cgd.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $(dirname $f))_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head; tail -2 $R/logs/lcuda_probe.log
timeout 150 python .gpu/compare26.py > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -8 $R/compare.log
timeout 60 python .gpu/phase_probe.py candidates/scalar_gated_delta/v26_early_qs0.py candidates/channel_gated_delta/v26_early_qs0.py > $R/phase.log 2>&1
echo "phase rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/phase.log
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/config.yaml
for p in scalar_gated_delta channel_gated_delta; do
  line=$(grep "^$p .*graph replay" $R/compare.log)
  if ! python -c "import re,sys; a=[float(x) for x in re.findall(r'([0-9.]+) us', sys.argv[1])]; sys.exit(0 if len(a) >= 2 and a[1] < min(a[0], a[2]) else 1)" "$line"; then
    echo "harness $p skipped: $line" | tee -a $R/timeline.txt; continue
  fi
  timeout 170 python -m harness run problems/$p.yaml --candidates candidates/$p/v25_split_issue.py candidates/$p/v26_early_qs0.py \
    --results /tmp/results --config $R/config.yaml > $R/harness_$p.log 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  tail -9 $R/harness_$p.log
done
cp -r /tmp/results $R/results 2>/dev/null
