#!/usr/bin/env python3
"""Compile, check and time every candidate of both gated-delta problems in one go.

1. Compiles all candidates in parallel (a process pool; each candidate gets its own
   TORCH_EXTENSIONS_DIR, so the main process later just loads the built extension).
2. For each problem and shape (seed, medium, large) and input case (normal: the problem's
   distributions; long: gates in [0.99, 1); tiny: 30% of gates replaced by 1e-15..1e-30) draws
   fresh random inputs, computes the gold output with the problem's reference Model in float64,
   and checks every CUDA candidate: max of |out-gold| / (1e-4|gold| + 1e-4 RMS(gold)) (<= 1 passes).
3. Extra odd shapes (D not a multiple of 4, T not a multiple of any chunk, D up to 128).
4. Times each CUDA candidate on the normal inputs: events around single calls (median) and CUDA
   graph replay (several calls captured per graph, median per call).
5. CPU candidates: checked at the seed shape and odd shapes on the CPU, timed with perf_counter.
Full log to stdout (tee it to $OUT/bench.log), JSON to $OUT/results.json, short table last.

usage: PYTHONUNBUFFERED=1 python3 tools/kernel_bench.py [--cpu-only] [--only SUBSTR[,SUBSTR]] [--shapes seed,medium]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import os
import random
import statistics
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ["scalar_gated_delta", "channel_gated_delta"]
SHAPES = {"seed": (2, 128, 4, 24), "medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}
ODD_SHAPES = [(1, 37, 3, 24), (2, 70, 2, 5), (1, 50, 2, 100), (1, 33, 1, 128), (3, 65, 2, 64), (1, 1, 1, 1),
              (2, 19, 3, 36)]
CASES = ["normal", "long", "tiny"]
EXT_ROOT = os.environ.get("KB_EXT_ROOT", "/tmp/kb_ext")


def ext_dir(problem: str, stem: str) -> str:
    return os.path.join(EXT_ROOT, problem, stem)


def candidate_paths(problem: str, only: str | None) -> list[Path]:
    paths = sorted((ROOT / "candidates" / problem).glob("*.py"))
    return [p for p in paths if not only or any(part in p.stem for part in only.split(","))]


def is_cpu_candidate(path: Path) -> bool:
    return "cuda_sources" not in path.read_text()


def load_module(path: Path, problem: str):
    os.environ["TORCH_EXTENSIONS_DIR"] = ext_dir(problem, path.stem)
    spec = importlib.util.spec_from_file_location(f"cand_{problem}_{path.stem}", str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compile_worker(args):
    path, problem = args
    os.environ.setdefault("MAX_JOBS", "2")
    t0 = time.time()
    try:
        load_module(Path(path), problem)
        return path, problem, True, time.time() - t0, ""
    except Exception:  # report and carry on with the other candidates
        return path, problem, False, time.time() - t0, traceback.format_exc()[-4000:]


def load_reference(problem: str):
    spec = importlib.util.spec_from_file_location(f"ref_{problem}", str(ROOT / "problems" / f"{problem}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_inputs(torch, problem, shape, case, gen, device):
    B, T, H, D = shape
    full = (B, T, H, D)
    gshape = (B, T, H) if problem == "scalar_gated_delta" else full
    q = torch.randn(full, generator=gen, device=device)
    k = torch.randn(full, generator=gen, device=device)
    v = torch.randn(full, generator=gen, device=device)
    gate = torch.sigmoid(torch.randn(gshape, generator=gen, device=device) + 2.0)
    if case == "long":
        gate = 0.99 + 0.01 * torch.rand(gshape, generator=gen, device=device)
        gate = torch.clamp(gate, max=1.0 - 2.0 ** -24)
    elif case == "tiny":
        mask = torch.rand(gshape, generator=gen, device=device) < 0.3
        tiny = torch.pow(10.0, -(15.0 + 15.0 * torch.rand(gshape, generator=gen, device=device)))
        gate = torch.where(mask, tiny, gate)
    inputs = [q, k, v, gate]
    if problem == "scalar_gated_delta":
        inputs.append(torch.rand(gshape, generator=gen, device=device))
    return [x.contiguous() for x in inputs]


def gold_output(torch, ref_mod, inputs):
    with torch.no_grad():
        return ref_mod.Model()(*[x.double() for x in inputs])


def error_stats(torch, out, gold):
    if out is None or tuple(out.shape) != tuple(gold.shape) or out.dtype != torch.float32:
        return {"ok": False, "ratio": float("inf"), "note": "bad shape/dtype"}
    finite = bool(torch.isfinite(out).all().item())
    diff = (out.double() - gold).abs()
    rms = gold.pow(2).mean().sqrt()
    tol = 1e-4 * gold.abs() + 1e-4 * rms
    ratio = (diff / tol).max().item() if finite else float("inf")
    max_abs = diff.max().item()
    rms_v = rms.item()
    return {"ok": finite and ratio <= 1.0, "ratio": ratio, "max_abs": max_abs,
            "max_abs_over_rms": max_abs / rms_v if rms_v > 0 else float("nan"), "finite": finite}


def time_cuda(torch, fn, args, budget_s=0.25):
    for _ in range(2):
        fn(*args)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    one = time.perf_counter() - t0
    n = int(max(3, min(200, budget_s / max(one, 1e-6))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        starts[i].record()
        fn(*args)
        ends[i].record()
    torch.cuda.synchronize()
    ev = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
    res = {"events_us_median": statistics.median(ev), "events_us_min": min(ev), "events_n": n}
    try:
        per_graph = int(max(1, min(20, 0.002 / max(one, 1e-6))))
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                fn(*args)
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outs = [fn(*args) for _ in range(per_graph)]
        graph.replay()
        torch.cuda.synchronize()
        reps = int(max(1, min(50, n // per_graph)))
        samples = []
        for _ in range(5):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(reps):
                graph.replay()
            b.record()
            torch.cuda.synchronize()
            samples.append(a.elapsed_time(b) * 1000.0 / (reps * per_graph))
        res.update({"graph_us_median": statistics.median(samples), "graph_us_min": min(samples),
                    "graph_calls_per_replay": per_graph, "graph_replays": reps})
        del graph, outs
    except Exception as exc:  # graph capture is optional; events still stand
        res["graph_error"] = repr(exc)[:300]
    return res


def floors(shape):
    B, T, H, D = shape
    return {"bytes_scalar": 4 * (4 * B * T * H * D + 2 * B * T * H), "bytes_channel": 4 * 5 * B * T * H * D,
            "fma_2_per_elem": 2 * B * T * H * D * D}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu-only", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--shapes", default="seed,medium,large")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/kb_out"))
    ap.add_argument("--jobs", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    seed = random.SystemRandom().randrange(1 << 30)
    print(f"[bench] input seed {seed}", flush=True)

    todo = []
    for problem in PROBLEMS:
        for path in candidate_paths(problem, args.only):
            if args.cpu_only and not is_cpu_candidate(path):
                continue
            todo.append((str(path), problem))
    jobs = args.jobs or min(len(todo), max(1, (os.cpu_count() or 2)))
    # Nothing else builds here now, so any torch build lock is left by a killed compile: torch up to 2.11
    # would wait on it forever.
    for stale in Path(EXT_ROOT).glob("*/*/*/lock"):
        print(f"[bench] removing a stale build lock: {stale}", flush=True)
        stale.unlink(missing_ok=True)
    t0 = time.time()
    built = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
        for path, problem, ok, secs, err in pool.map(compile_worker, todo):
            built[(problem, Path(path).stem)] = ok
            print(f"[compile] {problem}/{Path(path).stem}: {'ok' if ok else 'FAILED'} in {secs:.1f}s", flush=True)
            if not ok:
                print(err, flush=True)
    print(f"[compile] all done in {time.time() - t0:.1f}s", flush=True)

    import torch
    cuda = torch.cuda.is_available() and not args.cpu_only
    if cuda:
        print(f"[bench] device {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    results = []

    def record(**kw):
        results.append(kw)
        print("[result] " + json.dumps(kw), flush=True)

    for problem in PROBLEMS:
        ref_mod = load_reference(problem)
        models = {}
        for path in candidate_paths(problem, args.only):
            if not built.get((problem, path.stem)):
                continue
            try:
                models[path.stem] = (load_module(path, problem).ModelNew(), is_cpu_candidate(path))
            except Exception:
                print(f"[load] {problem}/{path.stem} FAILED\n{traceback.format_exc()[-2000:]}", flush=True)
        gpu_models = {n: m for n, (m, cpu) in models.items() if not cpu}
        cpu_models = {n: m for n, (m, cpu) in models.items() if cpu}

        # ---- CUDA candidates: named shapes
        if cuda and gpu_models:
            for shape_name in args.shapes.split(","):
                shape = SHAPES[shape_name]
                print(f"[shape] {problem} {shape_name} {shape} floors {floors(shape)}", flush=True)
                for case in CASES:
                    gen = torch.Generator(device="cuda")
                    gen.manual_seed(seed + hash((problem, shape_name, case)) % 100000)
                    inputs = make_inputs(torch, problem, shape, case, gen, "cuda")
                    tg = time.time()
                    gold = gold_output(torch, ref_mod, inputs)
                    torch.cuda.synchronize()
                    print(f"[gold] {problem} {shape_name} {case} in {time.time() - tg:.2f}s", flush=True)
                    for name, model in gpu_models.items():
                        try:
                            with torch.no_grad():
                                out = model(*inputs)
                            torch.cuda.synchronize()
                            st = error_stats(torch, out, gold)
                            del out
                        except Exception as exc:
                            st = {"ok": False, "ratio": float("inf"), "error": repr(exc)[:500]}
                        entry = {"problem": problem, "cand": name, "shape": shape_name, "case": case, **st}
                        if case == "normal" and st.get("ok"):
                            try:
                                with torch.no_grad():
                                    entry.update(time_cuda(torch, model, inputs))
                            except Exception as exc:
                                entry["time_error"] = repr(exc)[:500]
                        record(kind="named", **entry)
                    del inputs, gold
                    torch.cuda.empty_cache()
            # ---- CUDA candidates: odd shapes
            for shape in ODD_SHAPES:
                for case in ("normal", "tiny"):
                    gen = torch.Generator(device="cuda")
                    gen.manual_seed(seed + hash((problem, shape, case)) % 100000)
                    inputs = make_inputs(torch, problem, shape, case, gen, "cuda")
                    gold = gold_output(torch, ref_mod, inputs)
                    for name, model in gpu_models.items():
                        try:
                            with torch.no_grad():
                                out = model(*inputs)
                            torch.cuda.synchronize()
                            st = error_stats(torch, out, gold)
                        except Exception as exc:
                            st = {"ok": False, "ratio": float("inf"), "error": repr(exc)[:500]}
                        record(kind="odd", problem=problem, cand=name, shape=str(shape), case=case, **st)

        # ---- CPU candidates (seed shape + odd shapes, on the CPU)
        for name, model in cpu_models.items():
            for shape_name, shape in [("seed", SHAPES["seed"])] + [(str(s), s) for s in ODD_SHAPES]:
                for case in CASES:
                    gen = torch.Generator()
                    gen.manual_seed(seed + hash((problem, shape_name, case, "cpu")) % 100000)
                    inputs = make_inputs(torch, problem, shape, case, gen, "cpu")
                    gold = gold_output(torch, ref_mod, inputs)
                    try:
                        with torch.no_grad():
                            out = model(*inputs)
                        st = error_stats(torch, out, gold)
                    except Exception as exc:
                        st = {"ok": False, "ratio": float("inf"), "error": repr(exc)[:500]}
                    entry = {"problem": problem, "cand": name, "shape": shape_name, "case": case, **st}
                    if shape_name == "seed" and case == "normal" and st.get("ok"):
                        ts = []
                        for _ in range(20):
                            t1 = time.perf_counter()
                            model(*inputs)
                            ts.append((time.perf_counter() - t1) * 1e6)
                        entry["cpu_us_median"] = statistics.median(ts)
                    record(kind="cpu" if shape_name == "seed" else "cpu_odd", **entry)

    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump({"seed": seed, "results": results}, fh, indent=1)

    # ---- short table
    print("\n==== summary (ratio = max err / tolerance over cases; <=1 passes; times in us) ====")
    odd_bad = {}
    for r in results:
        if r["kind"] in ("odd", "cpu_odd") and not r.get("ok"):
            odd_bad.setdefault((r["problem"], r["cand"]), []).append(f"{r['shape']}:{r['case']}")
    rows = {}
    for r in results:
        if r["kind"] not in ("named", "cpu"):
            continue
        key = (r["problem"], r["cand"], r["shape"])
        row = rows.setdefault(key, {"ok": True, "ratio": 0.0, "ev": None, "gr": None, "cpu": None, "cases": []})
        row["ok"] = row["ok"] and bool(r.get("ok"))
        row["ratio"] = max(row["ratio"], r.get("ratio", float("inf")))
        if not r.get("ok"):
            row["cases"].append(r["case"])
        if r["case"] == "normal":
            row["ev"] = r.get("events_us_median")
            row["gr"] = r.get("graph_us_median")
            row["cpu"] = r.get("cpu_us_median")
    fmt = lambda x: "-" if x is None else (f"{x:.1f}" if x < 1e4 else f"{x:.0f}")
    print(f"{'problem':22s} {'candidate':22s} {'shape':7s} {'ok':4s} {'ratio':>9s} {'events':>9s} {'graph':>9s} {'cpu':>9s}")
    for (problem, cand, shape), row in sorted(rows.items()):
        print(f"{problem:22s} {cand:22s} {shape:7s} {'yes' if row['ok'] else 'NO':4s} {row['ratio']:9.3g} "
              f"{fmt(row['ev']):>9s} {fmt(row['gr']):>9s} {fmt(row['cpu']):>9s}"
              + (f"  failed: {','.join(row['cases'])}" if row["cases"] else ""))
    for (problem, cand), bad in sorted(odd_bad.items()):
        print(f"ODD-SHAPE FAILURES {problem}/{cand}: {' '.join(bad[:8])}")
    if not odd_bad:
        print("odd shapes: all passed")


if __name__ == "__main__":
    main()
