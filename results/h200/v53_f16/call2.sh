#!/usr/bin/env bash
# Session 24, call 2: why v53_f16 ran slower than v52_sep at large (625 against 593 µs in call 1): probe53 (every
# warp's chunk by phase) on v53, and graph replay at large of v52, v53 and four timing-only variants that leave one
# stage out (make_x53.py: no A tile, no fp16 split, no Q S0 wgmma, no K^T Vt wgmma).
# Before the call: python .gpu/make_x53.py; probe53.py, time53.py, compare53.py in .gpu/.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
snap() { tar czf $OUT/r2.tgz.tmp -C $OUT r2 && mv $OUT/r2.tgz.tmp $OUT/r2.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
X=".gpu/x53a_noatile.py .gpu/x53b_nosplit.py .gpu/x53c_noqs0.py .gpu/x53d_noktvt.py"
FILES="$P/v52_sep.py $P/v53_f16.py $X"
sha256sum $FILES .gpu/probe53.py .gpu/time53.py .gpu/compare53.py > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext53b
T0=$(date +%s)
for f in $FILES; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/build_$(basename $f .py).log 2>&1 &
done
( timeout 240 python .gpu/probe53.py $P/v53_f16.py > $R/probe53.log 2>&1; echo "probe53 rc=$? at $(( $(date +%s) - T0 )) s" >> $R/timeline.txt ) &
wait
echo "builds and probe done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
grep -il 'error' $R/build_* | head
timeout 150 python .gpu/time53.py $FILES > $R/time53.log 2>&1
echo "time53 rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
cat $R/time53.log
grep -v Warning $R/probe53.log | head -30
