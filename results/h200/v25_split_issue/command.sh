#!/usr/bin/env bash
# Session 17, GPU call 4: v25_split_issue against v22_wg. Builds (4 files + 2 phase probes, in parallel), the comparison over
# shapes and gate cases with graph-replay times at large, the phase probe of v25, a harness run per problem.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
trap 'tar czf $OUT/r.tgz -C $OUT r; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
sha256sum candidates/*/v22_wg.py candidates/*/v25_split_issue.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext25
T0=$(date +%s)
python .gpu/phase_probe.py --dry candidates/scalar_gated_delta/v25_split_issue.py candidates/channel_gated_delta/v25_split_issue.py > $R/logs/dry.log 2>&1
for f in candidates/scalar_gated_delta/v22_wg.py candidates/channel_gated_delta/v22_wg.py candidates/scalar_gated_delta/v25_split_issue.py \
         candidates/channel_gated_delta/v25_split_issue.py .gpu/probe_v25_sgd.py .gpu/probe_v25_cgd.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $(dirname $f))_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head; 
timeout 150 python .gpu/compare25.py > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -8 $R/compare.log
timeout 60 python .gpu/phase_probe.py candidates/scalar_gated_delta/v25_split_issue.py candidates/channel_gated_delta/v25_split_issue.py > $R/phase.log 2>&1
echo "phase rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/phase.log
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/config.yaml
for p in scalar_gated_delta channel_gated_delta; do
  # a harness run only where v25's graph replay at large beat v22's (device time is short)
  line=$(grep "^$p .*graph replay" $R/compare.log)
  if ! python -c "import re,sys; a=[float(x) for x in re.findall(r'([0-9.]+) us', sys.argv[1])]; sys.exit(0 if len(a) >= 2 and a[1] < min(a[0], a[2]) else 1)" "$line"; then
    echo "harness $p skipped: $line" | tee -a $R/timeline.txt; continue
  fi
  timeout 170 python -m harness run problems/$p.yaml --candidates candidates/$p/v22_wg.py candidates/$p/v25_split_issue.py \
    --results /tmp/results --config $R/config.yaml > $R/harness_$p.log 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  tail -9 $R/harness_$p.log
done
cp -r /tmp/results $R/results 2>/dev/null
