#!/usr/bin/env bash
# Session 19, GPU call 4: v31_ylw against v29a_wsg.
# Builds (4 files + 3 role probes, in parallel), the comparison over shapes and gate cases with graph-replay times at
# medium and large, the role probe at both, a harness run of the scalar catalogue's v20 and v27 with the v28 files.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R/logs
snap() { tar czf $OUT/r.tgz.tmp -C $OUT r && mv $OUT/r.tgz.tmp $OUT/r.tgz; }  # a kill at the limit keeps the last stage's logs
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
V28="v31_ylw"
sha256sum $P/v29a_wsg.py $P/v31_ylw.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext31
T0=$(date +%s)
python .gpu/probe31.py $P/v31_ylw.py --dry > $R/logs/dry.log 2>&1
for f in $P/v29a_wsg.py $P/v31_ylw.py \
         .gpu/probe_v31_ylw.py; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$(basename $f .py).log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee $R/timeline.txt
grep -il 'error' $R/logs/build_* | head
so=$(ls /tmp/ext31/sgd_v31_ylw/*.so 2>/dev/null | head -1)
if command -v cuobjdump >/dev/null && [ -n "$so" ]; then
  cuobjdump -sass "$so" > $R/logs/v28_all.sass
  awk '/Function : .*gd_wsg_kernelILi64E/{f=1} /Function : / && !/gd_wsg_kernelILi64E/{f=0} f' $R/logs/v28_all.sass > $R/logs/wsg64.sass
  echo "wsg64: HGMMA: $(grep -c HGMMA $R/logs/wsg64.sass), USETMAXREG: $(grep -c USETMAXREG $R/logs/wsg64.sass), highest register: $(grep -o '\bR[0-9]\+' $R/logs/wsg64.sass | sed 's/R//' | sort -n | tail -1), lines $(wc -l < $R/logs/wsg64.sass)" | tee -a $R/timeline.txt
  gzip $R/logs/wsg64.sass; rm $R/logs/v28_all.sass
fi
grep -h "gd_wsg_kernel\|Used [0-9]* registers" $R/logs/build_v31_ylw.log | grep -A1 "gd_wsg" | head -8 >> $R/timeline.txt
timeout 240 python .gpu/compare30.py $V28 > $R/compare.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -i 'graph replay\|FAILURES\|failed' $R/compare.log; snap
timeout 90 python .gpu/probe31.py $P/v31_ylw.py > $R/phase.log 2>&1
echo "phase rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt; cat $R/phase.log; snap
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > $R/config.yaml
cands=""
for stem in $V28; do
  if ! grep -q "^$stem: load failed" $R/compare.log; then cands="$cands $P/$stem.py"; fi
done
left=$(( 390 - ($(date +%s) - T0) ))
echo "harness with$cands, ${left} s left" | tee -a $R/timeline.txt
timeout $left python -m harness run problems/scalar_gated_delta.yaml --candidates $P/v29a_wsg.py $cands \
  --results /tmp/results --config $R/config.yaml > $R/harness.log 2>&1
echo "harness rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
tail -12 $R/harness.log
cp -r /tmp/results $R/results 2>/dev/null
