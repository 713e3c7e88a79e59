#!/usr/bin/env bash
# Session 34, one call: ncu on v69 and v74_async at large; where a lone call's time goes (lone_diag); v73_tfqs
# against v69 (compare53, harness) through run63.sh.
set -u
export PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R/logs
snap() { tar czf $OUT/c5.tgz.tmp --exclude="*.ncu-rep" -C $OUT c5 && mv $OUT/c5.tgz.tmp $OUT/c5.tgz; }
trap 'snap; ls -la $OUT' EXIT
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; which ncu; ncu --version; } > $R/env.txt 2>&1
P=candidates/scalar_gated_delta
sha256sum $P/v69_sacc.py $P/v74_async.py $P/v73_tfqs.py .gpu/*.py .gpu/*.sh > $R/sha256.txt
export TORCH_EXTENSIONS_DIR=/tmp/ext63
T0=$(date +%s)
for n in v69_sacc v74_async v73_tfqs; do
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$P/$n.py'); m=u.module_from_spec(s); s.loader.exec_module(m)" > $R/logs/build_$n.log 2>&1 &
done
wait
echo "builds done at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
for n in v69_sacc v74_async; do
  name=ncu_${n}_large
  timeout 150 ncu --clock-control none --set full --import-source yes -k regex:gd_wsh_kernel --launch-skip 2 --launch-count 1 -f -o $R/$name \
    python .gpu/drive.py $P/$n.py large > $R/logs/$name.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  ncu --import $R/$name.ncu-rep --page details > $R/${name}_details.txt 2>&1
  ncu --import $R/$name.ncu-rep --page raw --csv > $R/logs/${name}_raw.csv 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass > $R/logs/${name}_sass.csv 2>&1
  python .gpu/an34.py $R/logs/${name}_sass.csv > $R/${name}_stalls.txt 2>&1
  rm -f $R/logs/${name}_sass.csv
  grep -E "Duration|Issue Slots Busy|Executed Ipc A|Tensor|No Eligible|Eligible Warps|SM Frequency|Registers" $R/${name}_details.txt | head -14
  head -4 $R/${name}_stalls.txt
done
snap
for s in medium large; do
  timeout 90 python .gpu/lone_diag.py $P/v69_sacc.py $s > $R/lone_diag_$s.log 2>&1
  echo "lone_diag $s rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/timeline.txt
  cat $R/lone_diag_$s.log | tail -12
done
snap
left=$(( 585 - ($(date +%s) - T0) - 25 ))
echo "run63 with LIMIT=$left" | tee -a $R/timeline.txt
RUN=c5run BASE=v69_sacc NEW=v73_tfqs PROBE=" " LIMIT=$left bash .gpu/run63.sh > $R/run63.log 2>&1
tail -30 $R/run63.log
