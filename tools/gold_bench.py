"""What a judge's own work costs on a GPU: one float64 gold answer, eager and replayed from a CUDA graph, and
page-locking an arena cold or after its pages were allocated ahead (needs a GPU).

    python3 tools/gold_bench.py --out gold_bench.json
"""
from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.problem import import_reference, load_problem  # noqa: E402
from harness.verify import gold_output, make_inputs  # noqa: E402

PROBLEMS = ["problems/scalar_gated_delta.yaml", "problems/channel_gated_delta.yaml"]


def timed(fn, repeats: int) -> tuple[list[float], object]:
    seconds, out = [], None
    for _ in range(repeats):
        torch.cuda.synchronize()
        started = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
    return seconds, out


def gold_rows(path: str, repeats: int) -> list[dict]:
    from harness.verify import GoldGraphs

    problem = load_problem(path)
    model = import_reference(problem).Model(*problem.init_inputs).double().eval().cuda()
    graphs = GoldGraphs(model)
    rows = []
    shapes = list(problem.shapes.values()) + list(getattr(problem, "check_shapes", {}).values())
    for shape in shapes:
        inputs = make_inputs(problem, shape, None, 1, torch.device("cuda"))
        eager_s, eager = timed(lambda: gold_output(model, inputs), repeats)
        started = time.perf_counter()
        first = graphs(inputs)
        torch.cuda.synchronize()
        first_s = time.perf_counter() - started
        fresh = make_inputs(problem, shape, None, 2, torch.device("cuda"))
        replay_s, replayed = timed(lambda: graphs(fresh), repeats)
        rows.append({"problem": problem.name, "shape": shape.name, "dims": dict(shape.dims),
                     "eager_s": [round(s, 4) for s in eager_s],
                     "graph_first_s": round(first_s, 4), "graph_replay_s": [round(s, 4) for s in replay_s],
                     "first_equal": bool(torch.equal(first, eager)),
                     "replay_equal": bool(torch.equal(replayed, gold_output(model, fresh))),
                     "graph_state": graphs.state(graphs.signature(inputs))})
        print(json.dumps(rows[-1]), flush=True)
    graphs.clear()
    torch.cuda.empty_cache()
    return rows


def pin_rows(gib: float) -> list[dict]:
    driver = ctypes.CDLL("libcuda.so.1")
    register, unregister = driver.cuMemHostRegister_v2, driver.cuMemHostUnregister
    register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    unregister.argtypes = [ctypes.c_void_p]
    size = int(gib * 2**30)
    rows = []
    for ahead in ("none", "fallocate", "fallocate+touch"):
        fd = os.memfd_create("bench-arena", 0)
        os.ftruncate(fd, size)
        started = time.perf_counter()
        if ahead != "none":
            os.posix_fallocate(fd, 0, size)
        arena = mmap.mmap(fd, size)
        if ahead == "fallocate+touch":
            arena.madvise(mmap.MADV_WILLNEED)
            view = memoryview(arena)
            for offset in range(0, size, mmap.PAGESIZE):   # fault each page into this mapping
                view[offset] = 0
            del view
        ahead_s = time.perf_counter() - started
        buffer = torch.frombuffer(arena, dtype=torch.uint8)
        torch.cuda.synchronize()
        started = time.perf_counter()
        code = register(buffer.data_ptr(), size, 0)
        pin_s = time.perf_counter() - started
        rows.append({"arena_gib": gib, "ahead": ahead, "ahead_s": round(ahead_s, 3), "pin_s": round(pin_s, 3),
                     "code": code})
        print(json.dumps(rows[-1]), flush=True)
        unregister(buffer.data_ptr())
        del buffer
        arena.close()
        os.close(fd)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--arena-gib", type=float, default=4.2)
    args = parser.parse_args()
    torch.cuda.set_device(0)
    report = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cores": os.cpu_count(),
              "pin": pin_rows(args.arena_gib), "gold": []}
    for path in PROBLEMS:
        report["gold"] += gold_rows(path, args.repeats)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
