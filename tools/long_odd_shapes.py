"""Check gated-delta candidates where the harness does not look (needs a GPU): T > 256 at odd sizes, with tiny gates.

The problems' check shapes reach the tensor-core kernels' fallbacks (partial last chunk, D below the padded head
size) with the problems' own gate cases; this adds 30% of gates at 1e-15..1e-30, which sends chunks down the
step-by-step safe path (candidates/*/NOTES.md). Inputs are drawn here; the reference, the float64 gold and the
comparison are the harness's. Prints each (shape, case) and a verdict per file; exit code 1 if any failed.

    python3 tools/long_odd_shapes.py candidates/scalar_gated_delta/v20_ws.py \
        candidates/channel_gated_delta/v21_ws_bal.py

The problem is the candidate's folder name (candidates/<problem>/), or --problem for a file elsewhere. Timing and
everything else belongs to `python -m harness run PROBLEM.yaml --candidates FILE`.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.problem import import_reference, load_problem  # noqa: E402
from harness.verify import compare, gold_output  # noqa: E402

SHAPES = [(1, 300, 2, 5), (1, 333, 1, 100), (2, 290, 3, 36), (1, 257, 1, 128), (1, 401, 2, 64), (2, 320, 3, 32),
          (1, 512, 2, 64), (1, 300, 2, 128), (2, 1024, 4, 64)]
CASES = ("normal", "long", "tiny")   # sigmoid(N(2, 1)) as the problems draw; [0.99, 1); 30% of gates 1e-15..1e-30


def load_candidate(path: Path):
    spec = importlib.util.spec_from_file_location(f"candidate_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew()


def draw(shape: tuple[int, int, int, int], case: str, channel: bool, generator: torch.Generator) -> list[torch.Tensor]:
    B, T, H, D = shape
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=generator) for _ in range(3))
    gate_shape = (B, T, H, D) if channel else (B, T, H)
    gate = torch.sigmoid(torch.randn(gate_shape, device="cuda", generator=generator) + 2.0)
    if case == "long":
        gate = 0.99 + 0.0099 * torch.rand(gate_shape, device="cuda", generator=generator)
    if case == "tiny":
        tiny = 10.0 ** (-15 - 15 * torch.rand(gate_shape, device="cuda", generator=generator))
        gate = torch.where(torch.rand(gate_shape, device="cuda", generator=generator) < 0.3, tiny, gate)
    return [q, k, v, gate] + ([] if channel else [torch.rand(B, T, H, device="cuda", generator=generator)])


def check(path: Path, problem_yaml: Path) -> bool:
    problem = load_problem(problem_yaml)
    channel = problem.inputs[3].shape == problem.inputs[0].shape   # a gate per value column, as q is laid out
    reference = import_reference(problem).Model(*problem.init_inputs)
    model = load_candidate(path)
    generator = torch.Generator(device="cuda").manual_seed(0)
    passed, worst = True, 0.0
    for shape in SHAPES:
        for case in CASES:
            inputs = draw(shape, case, channel, generator)
            with torch.no_grad():
                out = model(*inputs)
            max_abs, max_rel, ok, reason = compare(out, gold_output(reference, inputs), problem)
            passed &= ok
            worst = max(worst, max_rel)
            print(f"{problem.name} {path.name} {shape} {case}: max_abs_err {max_abs:.3g} max_rel_err {max_rel:.3g}"
                  f"{'' if ok else ' FAIL ' + reason}", flush=True)
    print(f"{problem.name} {path.name}: {'ok' if passed else 'FAIL'} (worst max_rel_err {worst:.3g})", flush=True)
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidates", nargs="+", type=Path)
    parser.add_argument("--problem", type=Path, help="default: problems/<the candidate's folder name>.yaml")
    args = parser.parse_args()
    results = [check(path, args.problem or ROOT / "problems" / f"{path.resolve().parent.name}.yaml")
               for path in args.candidates]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
