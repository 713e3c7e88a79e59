"""What a burst receipt costs the sandbox (harness/receipt.py) on this machine's device, per output, at the
scalar problem's output sizes: the digest as shipped beside the float64 sum of every product it replaced.

    python tools/receipt_bench.py [--device cuda] [--reps 20]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import receipt  # noqa: E402

SIZES = {"seed": 2 * 128 * 4 * 24, "medium": 8 * 1024 * 16 * 64, "large": 8 * 4096 * 16 * 128}
BURST = {"seed": 64, "medium": 31, "large": 3}   # outputs a burst keeps on an H100 (records' judge_burst_calls)


def float64_of_every_product(out: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return receipt.products([out], weight).sum(dtype=torch.float64)


def shipped(out: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return receipt.digest(receipt.products([out], weight))


def timed_us(work, device: str, reps: int) -> list[float]:
    samples = []
    for _ in range(reps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            work()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3)
        else:
            began = time.perf_counter()
            work()
            samples.append((time.perf_counter() - began) * 1e6)
    return sorted(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor()
    print(json.dumps({"device": name, "torch": torch.__version__}))
    for shape, numel in SIZES.items():
        out = torch.randn(numel, device=args.device)
        row = {"shape": shape, "numel": numel}
        row["weights_us"] = timed_us(lambda: receipt.weights(1, numel, args.device), args.device, args.reps)[
            args.reps // 2]
        weight = receipt.weights(1, numel, args.device)
        for label, method in (("float64_of_every_product_us", float64_of_every_product), ("shipped_us", shipped)):
            row[label] = timed_us(lambda: method(out, weight), args.device, args.reps)[args.reps // 2]
        kept = [torch.randn(numel, device=args.device) for _ in range(BURST[shape])]
        row[f"burst_of_{BURST[shape]}_one_at_a_time_us"] = timed_us(
            lambda: torch.stack([shipped(out, weight)[0] for out in kept]).tolist(), args.device, args.reps)[
            args.reps // 2]
        row[f"burst_of_{BURST[shape]}_shipped_us"] = timed_us(
            lambda: receipt.digests(kept, 1, numel, args.device), args.device, args.reps)[args.reps // 2]
        row["digest_gap"] = abs(float(shipped(out, weight)[0]) - float(float64_of_every_product(out, weight)))
        print(json.dumps({key: float(f"{value:.4g}") if isinstance(value, float) else value
                          for key, value in row.items()}))


if __name__ == "__main__":
    main()
