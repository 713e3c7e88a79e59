"""v53_f16 against v52_sep and a float64 recurrence (the harness's tolerance: |y - gold| <= 1e-4 RMS(gold) +
1e-4 |gold|, printed as the largest ratio of error to tolerance, 1 = the limit), over D = 128 shapes and input
cases that reach the fp16 pieces' scaling (inputs scaled by powers of ten, gates that take the safe path), then
graph-replay times at large. Usage: python compare53.py NEW [BASE]."""
import importlib.util
import sys

import torch

SHAPES = [(1, 257, 1, 128), (1, 1000, 1, 128), (3, 300, 5, 128), (2, 2048, 16, 128), (8, 4096, 16, 128),
          (1, 999, 3, 64)]
CASES = ["normal", "long", "tiny", "q1e4_k1e-3_v1e5", "all1e-6", "span8", "span20"]
LIMIT_PROBES = {"span20"}  # printed, not counted: beyond what the fp16 pieces hold (see the kernel's header)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew()


def inputs(shape, case, seed):
    B, T, H, D = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
    if case == "long":
        gate = 0.99 + 0.01 * torch.rand(B, T, H, device="cuda", generator=g)
    else:
        gate = torch.sigmoid(torch.randn(B, T, H, device="cuda", generator=g) + 2.0)
    if case == "tiny":
        mask = torch.rand(B, T, H, device="cuda", generator=g) < 0.3
        gate = torch.where(mask, 10.0 ** (-15 - 15 * torch.rand(B, T, H, device="cuda", generator=g)), gate)
    if case == "q1e4_k1e-3_v1e5":
        q, k, v = q * 1e4, k * 1e-3, v * 1e5
    if case == "all1e-6":
        q, k, v = q * 1e-6, k * 1e-6, v * 1e-6
    if case.startswith("span"):  # columns of q, k, v spread over 2^-w .. 2^w, q's and k's against each other
        w = float(case[4:])
        span = 2.0 ** torch.linspace(-w, w, D, device="cuda")
        q, k, v = q * span, k * span.flip(0), v * span[torch.randperm(D, device="cuda", generator=g)]
    beta = torch.rand(B, T, H, device="cuda", generator=g)
    return [q.contiguous(), k.contiguous(), v.contiguous(), gate, beta]


def gold(q, k, v, gate, beta):
    q, k, v, gate, beta = (x.double() for x in (q, k, v, gate, beta))
    B, T, H, D = q.shape
    S = torch.zeros(B, H, D, D, dtype=torch.float64, device=q.device)
    y = torch.empty(B, T, H, D, dtype=torch.float64, device=q.device)
    for t in range(T):
        S.mul_(gate[:, t, :, None, None]).add_((beta[:, t, :, None, None] * k[:, t, :, :, None]) * v[:, t, :, None, :])
        y[:, t] = torch.einsum("bhi,bhij->bhj", q[:, t], S)
    return y


def over_tol(out, ref):
    tol = 1e-4 * ref.pow(2).mean().sqrt() + 1e-4 * ref.abs()
    return ((out.double() - ref).abs() / tol).max().item()


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


P = "candidates/scalar_gated_delta"
new_stem = sys.argv[1]
base_stem = sys.argv[2] if len(sys.argv) > 2 else "v52_sep"
base = load(f"{P}/{base_stem}.py", "base")
new = load(f"{P}/{new_stem}.py", "new")
failures = 0
for shape in SHAPES:
    for case in CASES:
        if shape[0] * shape[1] * shape[2] > 20000 and case not in ("normal", "long", "span8", "span20"):
            continue
        args = inputs(shape, case, 1234)
        ref = gold(*args)
        a, b = base(*args), new(*args)
        torch.cuda.synchronize()
        ra, rb = over_tol(a, ref), over_tol(b, ref)
        finite = bool(torch.isfinite(b).all())
        bad = ((not finite) or rb > 0.5) and case not in LIMIT_PROBES
        failures += bad
        print(f"{str(shape):18s} {case:16s} over_tol {base_stem} {ra:.3e} {new_stem} {rb:.3e} "
              f"bitwise_equal={torch.equal(a, b)} finite={finite}{'  FAIL' if bad else ''}", flush=True)
        del ref, a, b, args
        torch.cuda.empty_cache()
for shape in ((8, 4096, 16, 128),):
    args = inputs(shape, "normal", 7)
    t_b, t_n, t_b2, t_n2 = replay_us(base, args), replay_us(new, args), replay_us(base, args), replay_us(new, args)
    print(f"{str(shape)} graph replay median: {base_stem} {t_b:.1f} / {t_b2:.1f} us, {new_stem} {t_n:.1f} / "
          f"{t_n2:.1f} us", flush=True)
print("FAILURES", failures)
sys.exit(1 if failures else 0)
