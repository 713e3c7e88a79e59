#!/usr/bin/env bash
# One GPU call: build v13 and v19 for both problems (in parallel), compare them bit for bit, then a harness run.
set -u
mkdir -p "$OUT/logs"
{ date -u; git rev-parse HEAD; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
sha256sum candidates/*/v13_seed_tc.py candidates/*/v19_pipe.py > "$OUT/sha256.txt"
export TORCH_EXTENSIONS_DIR=/tmp/ext19
start=$(date +%s)
for f in candidates/scalar_gated_delta/v13_seed_tc.py candidates/channel_gated_delta/v13_seed_tc.py \
         candidates/scalar_gated_delta/v19_pipe.py candidates/channel_gated_delta/v19_pipe.py; do
  log="$OUT/logs/build_$(basename "$(dirname "$f")")_$(basename "$f" .py).log"
  python -c "import importlib.util as u; s=u.spec_from_file_location('m', '$f'); m=u.module_from_spec(s); s.loader.exec_module(m)" > "$log" 2>&1 &
done
wait
echo "builds: $(( $(date +%s) - start )) s" | tee "$OUT/timeline.txt"
timeout 200 python .gpu/compare19.py > "$OUT/compare.log" 2>&1; echo "compare rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
tail -8 "$OUT/compare.log"
for p in ${PROBLEMS:-scalar_gated_delta}; do
  timeout ${HARNESS_LIMIT:-300} python -m harness run problems/$p.yaml --candidates candidates/$p/v13_seed_tc.py candidates/$p/v19_pipe.py \
    --results "$OUT/results" --config .gpu/config19.yaml ${SHAPES_ARG:-} > "$OUT/harness_$p.log" 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
  tail -12 "$OUT/harness_$p.log"
done
