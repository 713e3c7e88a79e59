#!/usr/bin/env bash
# One harness run of candidates/4_SumReduction (cpu_loops) on the CPU, results in /tmp/flake/res_$1.
# REPO: the checkout to run (its .venv); the config is the slow tests' (tests/conftest.py cache_config).
cd ${REPO:-/work/main}
rm -rf /tmp/flake/res_$1
.venv/bin/python -m harness run problems/kernelbench/4_SumReduction.py --device cpu --results /tmp/flake/res_$1 \
  --config /tmp/flake/cfg.yaml --candidates candidates/4_SumReduction > /tmp/flake/log_$1.txt 2>&1
