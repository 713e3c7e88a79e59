#!/usr/bin/env bash
# The catalogue run: v13 and v19 at every shape, both problems, the graph baseline on; results tarred for the trip back.
set -u
{ date -u; git rev-parse HEAD; git status --short; nvidia-smi; python -c "import torch; print(torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
sha256sum candidates/*/v13_seed_tc.py candidates/*/v19_pipe.py > "$OUT/sha256.txt"
cat > /tmp/config.yaml <<'YAML'
baselines:
  compile: false
YAML
cp /tmp/config.yaml "$OUT/config.yaml"
start=$(date +%s)
for p in scalar_gated_delta channel_gated_delta; do
  timeout 270 python -m harness run problems/$p.yaml --candidates candidates/$p/v13_seed_tc.py candidates/$p/v19_pipe.py \
    --results /tmp/results --config /tmp/config.yaml > "$OUT/harness_$p.log" 2>&1
  echo "harness $p rc=$? at $(( $(date +%s) - start )) s" | tee -a "$OUT/timeline.txt"
  tail -9 "$OUT/harness_$p.log"
done
tar czf "$OUT/results.tgz" -C /tmp results
