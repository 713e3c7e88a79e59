#!/usr/bin/env bash
# Written in session 42, not run (its device time was spent). One call for three questions:
#  1. v80a_tmawg1 (make_v80.py: the TMA boxes on warps 13-15, gate and beta on warp 12) against v79b: probe76 bare
#     and reg, then the harness;
#  2. why the harness reads v79b 17-23 us under v79a and probe76 within 0.5%: probe76 bare on both with --flush (L2
#     flushed before each call, as the harness does);
#  2b. (session 43) v80b_gbpf (v80a with chunk c+3's gate and beta prefetched into L2): probe76 bare, --flush, harness;
#  3. whether the lone calls' check, changed after results/h100/v79/call4 (Judge.lone_call: the untimed call right
#     before the timed one), still misjudges honest files at seed and medium: two harness runs of v79b, v80a and
#     v80b (v79a, measured in five, left to the --flush probe), their records' judge_lone_us against
#     judge_calibrated_empty_us.
# Builds first, timings on a quiet host, one tarball. Before: python results/h100/v69_sacc/make_v79.py &&
# python results/h100/v69_sacc/make_v80.py
set -u
export PYTHONUNBUFFERED=1
P=candidates/scalar_gated_delta
R=results/h100/v69_sacc
L=$OUT/v80; mkdir -p $L
snap() { tar czf $OUT/v80.tgz.tmp -C $OUT v80 && mv $OUT/v80.tgz.tmp $OUT/v80.tgz; }
trap 'snap; rm -rf $L' EXIT
T0=$(date +%s)
DL=${DL:-560}
mark() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a $L/timeline.txt; }
cp .gpu/v79a_an64.py .gpu/v80a_tmawg1.py .gpu/v80b_gbpf.py $P/
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; git log -1 --format=%H; } > $L/env.txt 2>&1
sha256sum $P/v79a_an64.py $P/v79b_gblate.py $P/v80a_tmawg1.py $P/v80b_gbpf.py $R/probe76.py $R/make_v80.py harness/judge.py > $L/sha256.txt
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\nbuild:\n  overlap_evaluation: never\n  cache_dir: /tmp/hb80\n' > $L/config.yaml
cands=${CANDS:-"$P/v79b_gblate.py $P/v80a_tmawg1.py $P/v80b_gbpf.py"}  # CANDS: fewer, when short of device time
( MAX_JOBS=6 timeout 240 python -m harness run problems/scalar_gated_delta.yaml --candidates $cands --results /tmp/r80/build \
    --config $L/config.yaml --build-only > $L/build.log 2>&1; mark "harness build-only rc=$?" ) &
PROBES=${PROBES:-1}  # PROBES=0: the harness runs only (short of device time)
(( PROBES )) && probe_builds="v79a_an64:bare v79b_gblate:bare v80a_tmawg1:bare v80a_tmawg1:reg v80b_gbpf:bare" || probe_builds=""
for job in $probe_builds; do
  n=${job%%:*}; m=${job##*:}
  ( TORCH_EXTENSIONS_DIR=/tmp/ext80 timeout 240 python $R/probe76.py $P/$n.py --modes=$m --build > $L/build_${n}_$m.log 2>&1
    mark "probe build $n $m rc=$?" ) &
done
wait
harness_run() {
  left=$(( DL - ($(date +%s) - T0) ))
  (( left < 100 )) && { mark "harness run $1 skipped ($left s left)"; return; }
  timeout $(( left < 170 ? left : 170 )) python -m harness run problems/scalar_gated_delta.yaml --candidates $cands \
    --results /tmp/r80/run$1 --config $L/config.yaml --fresh > $L/harness$1.log 2>&1
  mark "harness run $1 rc=$?"
  grep -E "^[0-9—]+ +v[0-9]|^—" $L/harness$1.log | head -5
  cp -r /tmp/r80/run$1/scalar_gated_delta $L/records$1 2>/dev/null
  snap
}
# session 43: the device was scarce (eleven starts failed), so the first harness run comes before the probes, each
# step checks the time left (DL seconds from the start; pass a smaller DL when the budget is short)
harness_run 1
for job in v79b_gblate:bare v80a_tmawg1:bare v80b_gbpf:bare v79a_an64:bare:--flush v79b_gblate:bare:--flush \
    v80a_tmawg1:bare:--flush v80b_gbpf:bare:--flush v80a_tmawg1:reg; do
  IFS=: read -r n m f <<< "$job"
  (( PROBES )) || break
  (( DL - ($(date +%s) - T0) < 60 )) && { mark "probe $n $m $f skipped"; continue; }
  TORCH_EXTENSIONS_DIR=/tmp/ext80 timeout 90 python $R/probe76.py $P/$n.py --modes=$m $f > $L/probe_${n}_$m$f.log 2>&1
  mark "probe $n $m $f rc=$?"
  grep -v -i warn $L/probe_${n}_$m$f.log | grep -v "^ *$" | tail -20
done
snap
harness_run 2
