"""Check candidates on odd shapes with T > 256 (a benchmark-side check, needs a GPU): kernel_bench's odd shapes
all have T <= 70, which the short-sequence kernels take, so the tensor-core kernels' fallbacks (partial last
chunk, D below the padded head size) are only reached here. Prints max err/tol per shape and case (<= 1 passes).

    python3 tools/long_odd_shapes.py v9_tc_split_once v10_tc_lean
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench  # noqa: E402  (its extension folders, reference loader and error measure)

SHAPES = [(1, 300, 2, 5), (1, 333, 1, 100), (2, 290, 3, 36), (1, 257, 1, 128), (1, 401, 2, 64), (2, 320, 3, 32),
          (1, 512, 2, 64), (1, 300, 2, 128), (2, 1024, 4, 64)]


def main() -> int:
    failed = 0
    for problem, channel in (("scalar_gated_delta", False), ("channel_gated_delta", True)):
        reference = kernel_bench.load_reference(problem).Model()
        for stem in sys.argv[1:]:
            # kernel_bench's per-candidate extension folder, so a build it made is reused
            model = kernel_bench.load_module(kernel_bench.ROOT / "candidates" / problem / f"{stem}.py", problem).ModelNew()
            generator = torch.Generator(device="cuda").manual_seed(0)
            worst = 0.0
            for B, T, H, D in SHAPES:
                for case in ("normal", "long", "tiny"):
                    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=generator) for _ in range(3))
                    gate_shape = (B, T, H, D) if channel else (B, T, H)
                    gate = torch.sigmoid(torch.randn(gate_shape, device="cuda", generator=generator) + 2.0)
                    if case == "long":
                        gate = 0.99 + 0.0099 * torch.rand(gate_shape, device="cuda", generator=generator)
                    if case == "tiny":
                        tiny = 10.0 ** (-15 - 15 * torch.rand(gate_shape, device="cuda", generator=generator))
                        gate = torch.where(torch.rand(gate_shape, device="cuda", generator=generator) < 0.3, tiny, gate)
                    args = [q, k, v, gate] + ([] if channel else [torch.rand(B, T, H, device="cuda", generator=generator)])
                    with torch.no_grad():
                        out, gold = model(*args), reference(*[a.double() for a in args])
                    ratio = kernel_bench.error_stats(torch, out, gold)["ratio"]   # inf for a non-finite output
                    worst = max(worst, ratio)
                    print(f"{problem} {stem} {(B, T, H, D)} {case}: {ratio:.4f}", flush=True)
            failed += worst > 1
            print(f"{problem} {stem} worst err/tol {worst:.4f} {'FAIL' if worst > 1 else 'ok'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
