#!/usr/bin/env bash
# The judge's start, before (1460475: the judge imports torch, then starts its sandbox, which imports torch; a
# judge per CUDA-only baseline) and after (88ab82d: the sandbox starts first and imports beside the judge; no
# judge for ref:graph / ref:compile on a CPU run). Two git worktrees, one venv, one warm build cache; the two
# versions alternate, twice. Run on a quiet 2-core machine.
C="tests/adversarial/judge_honest/cpu_helper_class.py tests/adversarial/judge_honest/cpu_int_chunk_loop.py
   tests/adversarial/judge_honest/cpu_python_const_table.py tests/adversarial/judge_honest/cpu_half_storage_table.py
   tests/adversarial/judge/cpu_seed_recreate.py tests/adversarial/judge/cpu_memo_data_ptr.py
   tests/adversarial/judge/cpu_lazy_gap_stale.py tests/adversarial/judge/cpu_call_override.py"
git worktree add /tmp/ab_before 1460475 && git worktree add /tmp/ab_after 88ab82d
(cd /tmp/ab_after && python -m harness run problems/scalar_gated_delta.yaml --device cpu --results /tmp/ab/warm \
   --config /tmp/ab/config.yaml --candidates $C)          # builds once, into /tmp/ab/builds
for round in 1 2; do for v in before after; do
  (cd /tmp/ab_$v && /usr/bin/time -f "$v$round %e s wall, %U user %S sys" python -m harness run problems/scalar_gated_delta.yaml \
     --device cpu --results /tmp/ab/$v$round --config /tmp/ab/config.yaml --candidates $C)
done; done
