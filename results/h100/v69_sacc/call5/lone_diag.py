"""Where a lone call's time goes (D108's lone calls read 130-350 us over an honest 67 us kernel at medium).

One process, v69 at medium, the judge's pattern imitated: fresh inputs copied from pinned host memory and
synchronized ("stage"), an idle gap (the judge checks the previous output on the host), then one call and a
synchronize, timed by the wall clock and by CUDA events around the call. Conditions:
  b2b       calls back to back on the same inputs (no stage, no gap)
  stage     stage, then the call at once
  gapN      stage, N ms idle, then the call
  gapN_spin stage, N ms idle, a ~300 us spin kernel queued, then the call (events around the call alone)
  trivial   stage, 100 ms idle, the harness's empty call (an empty output and a one-element add)
Usage: python lone_diag.py FILE [SHAPE]"""
import importlib.util
import statistics
import sys
import time

import torch

path = sys.argv[1]
shape = sys.argv[2] if len(sys.argv) > 2 else "medium"
B, T, H, D = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}[shape]
spec = importlib.util.spec_from_file_location("cand", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
model = mod.ModelNew()
g = torch.Generator().manual_seed(1)
host = [torch.randn(B, T, H, D, generator=g).pin_memory() for _ in range(3)]
host += [torch.sigmoid(torch.randn(B, T, H, generator=g) + 2.0).pin_memory(), torch.rand(B, T, H, generator=g).pin_memory()]
dev = [x.cuda() for x in host]
scratch = torch.zeros(1, device="cuda")


def trivial(*inputs):
    out = torch.empty(B, T, H, D, device="cuda")
    scratch.add_(1.0)
    return out


def stage():
    for d, h in zip(dev, host):
        d.copy_(h, non_blocking=True)
    torch.cuda.synchronize()


def one(call, gap_ms=None, spin=False, do_stage=True):
    if do_stage:
        stage()
    if gap_ms:
        time.sleep(gap_ms / 1e3)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    if spin:
        torch.cuda._sleep(600_000)   # ~300 us at ~2 GHz
    e0.record()
    y = call(*dev)
    e1.record()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    del y
    return (t1 - t0) * 1e6, e0.elapsed_time(e1) * 1e3


for _ in range(20):
    model(*dev)
torch.cuda.synchronize()
conditions = [("b2b", model, None, False, False), ("stage", model, None, False, True)]
for gap in (1, 10, 100, 500):
    conditions += [(f"gap{gap}", model, gap, False, True), (f"gap{gap}_spin", model, gap, True, True)]
conditions.append(("trivial", trivial, 100, False, True))
results = {name: [] for name, *_ in conditions}
for rep in range(8):   # interleaved, so drift hits every condition alike
    for name, call, gap, spin, do_stage in conditions:
        results[name].append(one(call, gap, spin, do_stage))
print(f"{path} at {shape}: wall and event us per condition (median, min, max of 8)")
for name, rows in results.items():
    walls, events = [r[0] for r in rows], [r[1] for r in rows]
    print(f"{name:12s} wall {statistics.median(walls):8.1f} {min(walls):8.1f} {max(walls):8.1f}   "
          f"event {statistics.median(events):8.1f} {min(events):8.1f} {max(events):8.1f}")
