"""Verification: the problem's inputs, the float64 gold and the comparison, for the judge (judge.py); and the
few helpers the sandbox uses to describe an output or poison freed memory.

Inputs come from the problem's declared distributions (or a KernelBench file's own get_inputs(), seeded) and
a per-run secret seed the candidate never sees. The dynamic checks and their IDs live in judge.py (`CHECKS`).
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import torch

from harness.problem import InputSpec, Problem, Shape, VerifyCase

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}

@dataclass(frozen=True)
class Trial:
    case: str
    seed: int


def derive_seed(secret_seed: int, *parts: object) -> int:
    text = ":".join(map(str, (secret_seed, *parts)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:7], "little")


def trials_for(problem: Problem, secret_seed: int, shape: Shape) -> list[tuple[Trial, VerifyCase]]:
    return [(Trial(case.name, derive_seed(secret_seed, "verify", shape.name, case.name, s)), case)
            for case in problem.cases for s in range(case.seeds)]


def _draw(spec: InputSpec, dist: str, params: dict, sizes: tuple[int, ...], generator: torch.Generator,
          dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if dist == "normal":
        return torch.randn(sizes, generator=generator, device=device, dtype=torch.float32).mul_(params["std"]).add_(params["mean"]).to(dtype)
    if dist == "sigmoid_normal":
        x = torch.randn(sizes, generator=generator, device=device, dtype=torch.float64)
        x = torch.sigmoid(x * params["std"] + params["mean"])
        return x.clamp_(min=torch.finfo(dtype).tiny, max=1 - torch.finfo(dtype).eps / 2).to(dtype)
    if dist == "uniform":
        low, high = params["low"], params["high"]
        x = torch.rand(sizes, generator=generator, device=device, dtype=torch.float64) * (high - low) + low
        x = x.to(dtype)
        # open interval: nudge any value that rounded onto an endpoint back inside
        x = torch.where(x <= low, torch.nextafter(torch.tensor(low, dtype=dtype, device=device), torch.tensor(high, dtype=dtype, device=device)), x)
        x = torch.where(x >= high, torch.nextafter(torch.tensor(high, dtype=dtype, device=device), torch.tensor(low, dtype=dtype, device=device)), x)
        return x
    raise ValueError(dist)


def make_inputs(problem: Problem, shape: Shape, case: VerifyCase | None, seed: int, device: torch.device) -> list:
    """forward's arguments for one trial, the one place inputs are drawn: from the YAML's distributions, or from a
    KernelBench file's own get_inputs() (one shape, no cases; its non-tensor items come back as they are)."""
    if problem.input_source == "get_inputs":
        from harness.kernelbench import draw_inputs
        return draw_inputs(problem, seed, device)
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    dtype = DTYPES[problem.dtype]
    tensors = []
    for spec in problem.inputs:
        dist, params = (case.overrides.get(spec.name) if case else None) or (spec.dist, spec.params)
        tensors.append(_draw(spec, dist, params, spec.sizes(shape), generator, dtype, device))
    return tensors


def tensors_of(inputs: list) -> list[torch.Tensor]:
    """The tensors among forward's arguments: what the arena carries (constants travel in the layout message)."""
    return [x for x in inputs if isinstance(x, torch.Tensor)]


def gold_output(reference_model: torch.nn.Module, inputs: list) -> torch.Tensor:
    with torch.no_grad():
        return reference_model(*[x.double() if isinstance(x, torch.Tensor) else x for x in inputs])


class GoldGraphs:
    """float64 gold answers replayed from a CUDA graph of the reference's forward, one per input signature.

    A judge computes a dozen golds or more per timed shape, and a reference written as a Python loop over T
    spends most of each on launching small kernels. From the `capture_at`-th call for one signature on, the
    forward is captured once and replayed; a capture is trusted only after its first replay equals an eager
    gold of the same inputs bit for bit, else that signature stays eager. Any failure to capture (a reference
    that syncs, a GPU short of memory) leaves that signature eager: graphs change how fast, never what."""

    def __init__(self, model: torch.nn.Module, capture_at: int = 3, keep: int = 1):
        self.model = model
        self.capture_at = capture_at
        self.keep = keep   # graphs held at once: each holds its reference's working memory
        self.calls: dict[tuple, int] = {}
        self.graphs: dict[tuple, tuple] = {}
        self.eager: dict[tuple, str] = {}   # signature -> why it stays eager
        self.replays = 0

    @staticmethod
    def signature(inputs: list) -> tuple:
        return tuple((tuple(x.shape), str(x.dtype), str(x.device)) if isinstance(x, torch.Tensor) else ("value", repr(x))
                     for x in inputs)

    def state(self, key: tuple) -> str:
        return "graph" if key in self.graphs else self.eager.get(key, "eager")

    def __call__(self, inputs: list) -> torch.Tensor:
        key = self.signature(inputs)
        self.calls[key] = self.calls.get(key, 0) + 1
        if key in self.graphs:
            graph, static, out = self.graphs[key]
            for slot, x in zip(static, inputs):
                if slot is not None:
                    slot.copy_(x)
            graph.replay()
            self.replays += 1
            return out.clone()
        gold = gold_output(self.model, inputs)
        if self.calls[key] >= self.capture_at and key not in self.eager and all(
                x.is_cuda for x in inputs if isinstance(x, torch.Tensor)):
            self.capture(key, inputs, gold)
        return gold

    def capture(self, key: tuple, inputs: list, gold: torch.Tensor) -> None:
        while len(self.graphs) >= max(1, self.keep):
            self.graphs.pop(next(iter(self.graphs)))
        static = [x.double().clone() if isinstance(x, torch.Tensor) else None for x in inputs]
        arguments = [s if s is not None else x for s, x in zip(static, inputs)]
        graph = torch.cuda.CUDAGraph()
        try:
            torch.cuda.synchronize()
            with torch.no_grad(), torch.cuda.graph(graph):
                out = self.model(*arguments)
            graph.replay()
            same = isinstance(out, torch.Tensor) and torch.equal(out, gold)
        except Exception as exc:   # the reference cannot be captured: it stays eager, as written
            torch.cuda.synchronize()
            self.eager[key] = f"eager: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}" if str(exc) else "eager"
            return
        if not same:
            self.eager[key] = "eager: the graph's replay differed from the eager gold"
            return
        self.graphs[key] = (graph, static, out)

    def summary(self) -> dict:
        """For the records: how many golds were replayed, and why any signature stayed eager."""
        return {"replays": self.replays, "calls": sum(self.calls.values()),
                "eager": sorted(set(self.eager.values()))}

    def clear(self) -> None:
        self.graphs.clear()


def poison_free_memory(inputs: list[torch.Tensor]) -> None:
    """Fill memory the allocator is about to hand out with NaN, so a stale buffer cannot pass.

    Blocks the size of each input and of every power of two up to the largest are filled and
    freed at once; a candidate's scratch buffers of other sizes then land on NaN too.
    """
    largest = max(x.numel() * x.element_size() for x in inputs)
    sizes = sorted({x.numel() * x.element_size() for x in inputs} | {2**p for p in range(12, max(13, largest.bit_length() + 1))})
    device = inputs[0].device
    held = [torch.empty(size // 4, dtype=torch.float32, device=device).fill_(float("nan")) for size in sizes]
    del held
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def storage_span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def compare(out: torch.Tensor, gold: torch.Tensor, problem: Problem) -> tuple[float, float, bool, str]:
    """Returns max abs error, max error relative to the tolerance scale, pass, and a reason."""
    out64 = out.double()
    if not torch.isfinite(out64).all():
        bad = int((~torch.isfinite(out64)).sum())
        return math.inf, math.inf, False, f"{bad} non-finite output values"
    rms = float(gold.pow(2).mean().sqrt())
    atol = problem.atol_rms * rms + problem.atol   # YAML problems scale it by the gold's RMS; KernelBench's is absolute
    error = (out64 - gold).abs()
    limit = atol + problem.rtol * gold.abs()
    max_abs = float(error.max())
    rel = float((error / (gold.abs() + atol if atol > 0 else 1.0)).max())
    excess = error - limit
    worst = int(excess.argmax())
    if float(excess.view(-1)[worst]) > 0:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), gold.shape))
        return max_abs, rel, False, (f"max error {max_abs:.3g} over tolerance at {index}: "
                                     f"got {float(out64.view(-1)[worst]):.6g}, expected {float(gold.view(-1)[worst]):.6g}")
    return max_abs, rel, True, ""


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading
        return threading.active_count()


def is_near_constant(golds: list[torch.Tensor]) -> bool:
    """True when the reference output hardly depends on its inputs: zeros could pass."""
    first = golds[0]
    rms = float(first.pow(2).mean().sqrt())
    if rms == 0 or not math.isfinite(rms):
        return True
    spread = max(float((g - first).pow(2).mean().sqrt()) for g in golds[1:]) if len(golds) > 1 else rms
    return spread < 1e-3 * rms
