#!/usr/bin/env bash
# One GPU call: the wgmma layout probe, builds of v22_wg and the files it extends (both problems, in parallel), their
# comparison, then a harness run per problem at every shape (old and new file; graph and compile baselines off,
# 1 s timing budget per shape); results tarred for the trip back.
set -u
mkdir -p "$OUT/logs"
{ date -u; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
sha256sum candidates/*/v20_ws.py candidates/*/v21_ws_bal.py candidates/*/v22_wg.py > "$OUT/sha256.txt"
export TORCH_EXTENSIONS_DIR=/tmp/ext22
start=$(date +%s)
python .gpu/wg_probe.py > "$OUT/logs/probe.log" 2>&1 &
for f in candidates/scalar_gated_delta/v20_ws.py candidates/channel_gated_delta/v21_ws_bal.py \
         candidates/scalar_gated_delta/v22_wg.py candidates/channel_gated_delta/v22_wg.py; do
  log="$OUT/logs/build_$(basename "$(dirname "$f")")_$(basename "$f" .py).log"
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > "$log" 2>&1 &
done
wait
echo "builds: $(( $(date +%s) - start )) s" | tee "$OUT/timeline.txt"
cat "$OUT/logs/probe.log" | tail -4
timeout 200 python .gpu/compare22.py > "$OUT/compare.log" 2>&1; echo "compare rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
tail -30 "$OUT/compare.log"
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > "$OUT/config.yaml"
for p in scalar_gated_delta channel_gated_delta; do
  old=v20_ws; [ $p = channel_gated_delta ] && old=v21_ws_bal
  timeout 170 python -m harness run problems/$p.yaml --candidates candidates/$p/$old.py candidates/$p/v22_wg.py \
    --results /tmp/results --config "$OUT/config.yaml" > "$OUT/harness_$p.log" 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
  tail -9 "$OUT/harness_$p.log"
done
tar czf "$OUT/results.tgz" -C /tmp results
tar czf "$OUT/logs.tgz" -C "$OUT" logs
