#!/usr/bin/env bash
# Session 34, call 6: which side pays a cold lone call (lone_diag2, v69 at medium and large); v69 alone in the harness.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
snap() { tar czf $OUT/c6.tgz.tmp -C $OUT c6 && mv $OUT/c6.tgz.tmp $OUT/c6.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; nproc; lscpu | head -20; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
sha256sum $P/v69_sacc.py .gpu/lone_diag2.py .gpu/run63.sh > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext63
T0=$(date +%s)
for s in medium large; do
  timeout 200 python .gpu/lone_diag2.py $P/v69_sacc.py $s > $R/lone_diag2_$s.log 2>&1
  echo "lone_diag2 $s rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  grep -v Warn $R/lone_diag2_$s.log | tail -11
done
snap
left=$(( 420 - ($(date +%s) - T0) ))
RUN=c6run BASE=v69_sacc NEW=" " PROBE=" " LIMIT=$left bash .gpu/run63.sh > $R/run63.log 2>&1
tail -12 $R/run63.log
