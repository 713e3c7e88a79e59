"""Check candidates on odd shapes with T > 256 (a benchmark-side check, needs a GPU): kernel_bench's odd shapes
all have T <= 70, which the short-sequence kernels take, so the tensor-core kernels' fallbacks (partial last
chunk, D below the padded head size) are only reached here. Prints max err/tol per shape and case (<= 1 passes).

    python3 tools/long_odd_shapes.py v9_tc_split_once v10_tc_lean
"""
from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [(1, 300, 2, 5), (1, 333, 1, 100), (2, 290, 3, 36), (1, 257, 1, 128), (1, 401, 2, 64), (2, 320, 3, 32),
          (1, 512, 2, 64), (1, 300, 2, 128), (2, 1024, 4, 64)]


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"m_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    failed = 0
    for problem, channel in (("scalar_gated_delta", False), ("channel_gated_delta", True)):
        reference = load(ROOT / "problems" / f"{problem}.py").Model()
        for stem in sys.argv[1:]:
            # kernel_bench's per-candidate extension folder, so a build it made is reused
            os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(os.environ.get("KB_EXT_ROOT", "/tmp/kb_ext"), problem, stem)
            model = load(ROOT / "candidates" / problem / f"{stem}.py").ModelNew()
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
                    tolerance = 1e-4 * gold.pow(2).mean().sqrt() + 1e-4 * gold.abs()
                    ratio = ((out.double() - gold).abs() / tolerance).max().item()
                    ratio = float("inf") if math.isnan(ratio) else ratio   # NaN output
                    worst = max(worst, ratio)
                    print(f"{problem} {stem} {(B, T, H, D)} {case}: {ratio:.4f}", flush=True)
            failed += worst > 1
            print(f"{problem} {stem} worst err/tol {worst:.4f} {'FAIL' if worst > 1 else 'ok'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
