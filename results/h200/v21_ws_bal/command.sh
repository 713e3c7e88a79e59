#!/usr/bin/env bash
# One GPU call: build v20 and v21 for both problems (in parallel), compare their outputs, then a harness run per
# problem at every shape (v20 and v21; graph and torch.compile baselines off, 1 s timing budget per shape to fit
# the session's device time); results tarred for the trip back.
set -u
mkdir -p "$OUT/logs"
{ date -u; git rev-parse HEAD; git status --short; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
sha256sum candidates/*/v20_ws.py candidates/*/v21_ws_bal.py > "$OUT/sha256.txt"
export TORCH_EXTENSIONS_DIR=/tmp/ext21
start=$(date +%s)
for f in candidates/scalar_gated_delta/v20_ws.py candidates/channel_gated_delta/v20_ws.py \
         candidates/scalar_gated_delta/v21_ws_bal.py candidates/channel_gated_delta/v21_ws_bal.py; do
  log="$OUT/logs/build_$(basename "$(dirname "$f")")_$(basename "$f" .py).log"
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > "$log" 2>&1 &
done
wait
echo "builds: $(( $(date +%s) - start )) s" | tee "$OUT/timeline.txt"
timeout 150 python .gpu/compare21.py > "$OUT/compare.log" 2>&1; echo "compare rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
grep -v "max_diff_over_tol=[0-9.]*e-0[2-9]" "$OUT/compare.log" | tail -12
printf 'baselines:\n  graph: false\n  compile: false\ntiming:\n  budget_s: 1.0\n' > "$OUT/config.yaml"
for p in scalar_gated_delta channel_gated_delta; do
  timeout 160 python -m harness run problems/$p.yaml --candidates candidates/$p/v20_ws.py candidates/$p/v21_ws_bal.py \
    --results /tmp/results --config "$OUT/config.yaml" > "$OUT/harness_$p.log" 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
  tail -9 "$OUT/harness_$p.log"
done
tar czf "$OUT/results.tgz" -C /tmp results
