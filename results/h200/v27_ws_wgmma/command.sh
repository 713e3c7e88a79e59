#!/usr/bin/env bash
# Session 18, GPU call 2: v27_ws_wgmma and v27b_cons_atile (scalar) against v25_split_issue. Builds (3 files + 2 role
# probes, in parallel), the comparison over shapes and gate cases with graph-replay times at large, the role probe, a harness
# run where a v27 file's graph replay at large beat v25's.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }  # a kill at the limit keeps the last stage's logs
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
sha256sum candidates/scalar_gated_delta/v25_split_issue.py candidates/scalar_gated_delta/v27*.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext27
T0=$(date +%s)
python .gpu/probe27.py candidates/scalar_gated_delta/v27_ws_wgmma.py candidates/scalar_gated_delta/v27b_cons_atile.py --dry > $R/logs/dry.log 2>&1
for f in candidates/scalar_gated_delta/v25_split_issue.py candidates/scalar_gated_delta/v27_ws_wgmma.py candidates/scalar_gated_delta/v27b_cons_atile.py \
         .gpu/probe_v27_sgd.py .gpu/probe_v27b_sgd.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
so=$(ls /tmp/ext27/sgd_v27_ws_wgmma/*.so 2>/dev/null | head -1)
if command -v cuobjdump >/dev/null && [ -n "$so" ]; then
  cuobjdump -sass "$so" | awk '/Function : .*gd_wsg_kernel/{f=1} /Function : / && !/gd_wsg/{f=0} f' > $R/logs/wsg.sass
  echo "USETMAXREG: $(grep -c USETMAXREG $R/logs/wsg.sass), HGMMA: $(grep -c HGMMA $R/logs/wsg.sass), highest register: $(grep -o '\bR[0-9]\+' $R/logs/wsg.sass | sed 's/R//' | sort -n | tail -1)" | tee -a $R/timeline.txt
  gzip $R/logs/wsg.sass
else
  echo "no cuobjdump ($(command -v cuobjdump)) or no .so ($so)" | tee -a $R/timeline.txt
fi
timeout 200 python .gpu/compare27.py v27_ws_wgmma v27b_cons_atile > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|failed' $R/compare.log; snap
timeout 90 python .gpu/probe27.py candidates/scalar_gated_delta/v27_ws_wgmma.py candidates/scalar_gated_delta/v27b_cons_atile.py > $R/phase.log 2>&1
echo "phase rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/phase.log; snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/config.yaml
p=scalar_gated_delta
cands=""
for stem in v27_ws_wgmma v27b_cons_atile; do
  tag=${stem%%_*}
  line=$(grep "^$p $tag .*graph replay" $R/compare.log)
  if ! grep -q "^$stem: load failed" $R/compare.log && python -c "import re,sys; a=[float(x) for x in re.findall(r'([0-9.]+) us', sys.argv[1])]; sys.exit(0 if len(a) >= 3 and a[1] < min(a[0], a[2]) else 1)" "$line"; then
    cands="$cands candidates/$p/$stem.py"
  else
    echo "no harness run for $stem: $line" | tee -a $R/timeline.txt
  fi
done
if [ -n "$cands" ]; then
  timeout 280 python -m harness run problems/$p.yaml --candidates candidates/$p/v25_split_issue.py $cands \
    --results /tmp/results --config $R/config.yaml > $R/harness_$p.log 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  tail -12 $R/harness_$p.log
fi
cp -r /tmp/results $R/results 2>/dev/null
