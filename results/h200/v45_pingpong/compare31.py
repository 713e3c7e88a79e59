"""Files against v43_wsg (scalar only) over shapes and gate cases (the difference over the harness
tolerance), and graph-replay times at medium and large."""
import importlib.util
import sys
import time

import torch

ROOT = "."
SHAPES = [(1, 333, 1, 100), (1, 257, 1, 128), (1, 1000, 1, 128), (3, 300, 5, 128), (2, 2048, 16, 128), (2, 300, 2, 96),
          (1, 401, 2, 64), (1, 257, 1, 64), (1, 999, 3, 64), (3, 300, 5, 64), (2, 2048, 16, 64), (1, 290, 3, 63), (2, 999, 3, 17),
          (8, 1024, 16, 64), (8, 4096, 16, 128)]


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew()


def inputs(chan, shape, case, seed):
    B, T, H, D = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
    gshape = (B, T, H, D) if chan else (B, T, H)
    if case == "long":
        gate = 0.99 + 0.01 * torch.rand(gshape, device="cuda", generator=g)
    else:
        gate = torch.sigmoid(torch.randn(gshape, device="cuda", generator=g) + 2.0)
        if case == "tiny":
            mask = torch.rand(gshape, device="cuda", generator=g) < 0.3
            tiny = 10.0 ** (-15 - 15 * torch.rand(gshape, device="cuda", generator=g))
            gate = torch.where(mask, tiny, gate)
    if chan:
        return [q, k, v, gate]
    return [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]


def replay_us(model, args, reps=50):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(*args)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(*args)
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000)
    times.sort()
    return times[len(times) // 2]


failures = 0
problem, chan, base = "scalar_gated_delta", False, "v43_wsg"
old = load(f"candidates/{problem}/{base}.py", f"{problem}_old")
for stem in sys.argv[1:]:
    tag = stem.split("_")[0]
    try:
        new = load(f"candidates/{problem}/{stem}.py", f"{problem}_{tag}")
    except Exception as exc:  # a build failure of one file must not hide the other's results
        print(f"{stem}: load failed: {exc!r}"[:2000], flush=True)
        failures += 1
        continue
    for shape in SHAPES:
        for case in (("normal", "long", "tiny") if shape[1] * shape[0] < 20000 else ("normal",)):
            args = inputs(chan, shape, case, 1234)
            a, b = old(*args), new(*args)
            torch.cuda.synchronize()
            same = torch.equal(a, b)
            a64, b64 = a.double(), b.double()
            tol = 1e-4 * a64.pow(2).mean().sqrt() + 1e-4 * a64.abs()
            ratio = ((a64 - b64).abs() / tol).max().item()
            finite = bool(torch.isfinite(b).all())
            failures += (ratio > 0.1) or (not finite)  # v29a passes the harness's tolerance with room
            print(f"{tag:5s} {str(shape):18s} {case:6s} bitwise_equal={same} max_diff_over_tol={ratio:.3e} "
                  f"finite={finite}", flush=True)
    for shape in ((8, 1024, 16, 64), (8, 4096, 16, 128)):
        args = inputs(chan, shape, "normal", 7)
        t_old, t_new = replay_us(old, args), replay_us(new, args)
        t_old2 = replay_us(old, args)
        print(f"{problem} {tag} {str(shape):18s} graph replay median: {base} {t_old:.1f} us, {tag} {t_new:.1f} us, "
              f"{base} again {t_old2:.1f} us", flush=True)
print("FAILURES", failures)
sys.exit(1 if failures else 0)
