"""Which side pays a cold lone call (session 34, after lone_diag.py): the host's launch path or the device.

Each condition, 10 reps interleaved, for the candidate's call and the harness's empty call (torch.empty of the
output and a one-element add): launch = wall time until the call returns (host), sync = from there until the
synchronize returns (device work still queued), event = CUDA events around the call.
  hot        right after the previous call (no gap)
  sleep100   100 ms asleep (the process idle, the GPU idle)
  busy100    100 ms of host work in this process (the process busy, the GPU idle)
  sleep100_k 100 ms asleep, then a 5 us kernel and a synchronize just before (the GPU woken, the process too)
  sleep100_w 100 ms asleep, then 2 ms of one-block kernels just before (one SM busy until just before the call)
  sleep100_a 100 ms asleep, then one kernel over every SM and a synchronize just before (every SM woken)
  hot_a      right after the previous call, one kernel over every SM and a synchronize just before
The empty call is timed twice: as the harness's (`empty`) and with its add over every SM (`empty_a`).
Usage: python lone_diag2.py FILE [SHAPE]"""
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
g = torch.Generator(device="cuda").manual_seed(1)
dev = [torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3)]
dev += [torch.sigmoid(torch.randn(B, T, H, device="cuda", generator=g) + 2.0), torch.rand(B, T, H, device="cuda", generator=g)]
scratch = torch.zeros(1, device="cuda")
wide = torch.zeros(4 << 20, device="cuda")   # an add over it launches ~8,000 blocks: every SM runs some


def empty_call_all(*inputs):
    out = torch.empty(B, T, H, D, device="cuda")
    wide.add_(1.0)
    return out


def empty_call(*inputs):
    out = torch.empty(B, T, H, D, device="cuda")
    scratch.add_(1.0)
    return out


def busy(ms):
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1


def before(condition):
    if condition == "sleep100":
        time.sleep(0.1)
    elif condition == "busy100":
        busy(100)
    elif condition == "sleep100_k":
        time.sleep(0.1)
        torch.cuda._sleep(10_000)
        torch.cuda.synchronize()
    elif condition == "sleep100_w":
        time.sleep(0.1)
        end = time.perf_counter() + 2e-3
        while time.perf_counter() < end:
            scratch.add_(1.0)
        torch.cuda.synchronize()
    elif condition in ("sleep100_a", "hot_a"):
        if condition == "sleep100_a":
            time.sleep(0.1)
        wide.add_(1.0)
        torch.cuda.synchronize()


def one(call, condition):
    before(condition)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    e0.record()
    y = call(*dev)
    e1.record()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    del y
    return (t1 - t0) * 1e6, (t2 - t1) * 1e6, e0.elapsed_time(e1) * 1e3


for _ in range(20):
    model(*dev)
torch.cuda.synchronize()
conditions = ["hot", "hot_a", "sleep100", "busy100", "sleep100_k", "sleep100_w", "sleep100_a"]
calls = {"candidate": model, "empty": empty_call, "empty_a": empty_call_all}
results = {(c, n): [] for c in conditions for n in calls}
for rep in range(10):
    for c in conditions:
        for n, call in calls.items():
            results[(c, n)].append(one(call, c))
print(f"{path} at {shape}: us, median (min) of 10: launch (host, to the call's return), sync (after it), event")
for (c, n), rows in results.items():
    cols = list(zip(*rows))
    text = "  ".join(f"{label} {statistics.median(v):8.1f} ({min(v):7.1f})" for label, v in zip(("launch", "sync", "event"), cols))
    print(f"{c:11s} {n:9s} {text}")
