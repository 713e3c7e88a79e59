"""Who arrives last at gd_wsg_kernel<DP>'s chunk-loop barrier: lane 0 of every warp logs clock64 right before and right
after each of the loop's CTA barriers (first 128 chunks), per CTA, warp and chunk; the host lines the warps up by
their release times (which should agree within a barrier's latency; their spread is printed, so an offset between
the sub-partitions' clocks shows) and counts, per warp, its mean wait and how often it arrived last.
    python probe46.py FILE [FILE ...] [--dry]
Compiled for v43_wsg (CUDA 13.0 ptxas): no spills at D = 64; at D = 128 the logging spills 252 bytes, so read its
large figures with that in mind. Prepared in session 21 and not run (the device time was spent)."""
import sys
import types
from pathlib import Path

SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}
NCH = 128  # chunks logged


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, new)

    log = (f"{{ const long long ta = clock64(); cta_sync(); const long long tr = clock64(); if (lane == 0 && ch < {NCH}) {{ "
           f"long long* e = g_arr + ((blockIdx.x * 16 + warp) * {NCH} + ch) * 2; e[0] = ta; e[1] = tr; }} }}\n")
    sub("__device__ __forceinline__ void cta_sync()", f"__device__ long long g_arr[1024 * 16 * {NCH} * 2];\n"
        "__device__ __forceinline__ void cta_sync()")
    sub("      cta_sync();  // chunk c consumed; chunk c+1 prepared\n", "      " + log)
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n", "    " + log)
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + ARR_SRC],")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'ARR_SRC = r"""\n'
        f'torch::Tensor arr_read() {{ auto t = torch::empty({{1024 * 16 * {NCH} * 2}}, torch::kInt64);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_arr, sizeof(long long) * 1024 * 16 * {NCH} * 2); return t; }}\n"""\n'
        f'CPP_SRC = "torch::Tensor arr_read(); void sgd_{ver}_forward(')
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "arr_read"],')
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_arr_probe",')
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probearr_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probearr_{path.stem}")
    exec(compile(src, str(out), "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    for name, (B, T, H, D) in SHAPES.items():
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
        gate = torch.sigmoid(torch.randn((B, T, H), device="cuda", generator=g) + 2.0)
        args = [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
        for _ in range(3):
            model(*args)
        torch.cuda.synchronize()
        n = min(NCH, (T + 31) // 32)
        a = ext.arr_read().view(1024, 16, NCH, 2)[: B * H, :, :n].double()
        arrive, release = a[..., 0], a[..., 1]
        spread = (release.max(1).values - release.min(1).values)  # [CTA, chunk]
        offset = (release - release[:, :1]).median(2, keepdim=True).values  # per CTA and warp, against warp 0
        arrive_c = arrive - offset
        wait = release - arrive
        last = arrive_c.argmax(1)  # [CTA, chunk]
        nca = D // 16
        roles = ["consumer"] * nca + ["prep"] * (16 - nca - 1) + ["load"]
        step = (release[:, 0, 1:] - release[:, 0, :-1]).median().item()
        print(f"{path.stem} {name}: {B * H} CTAs x {n} chunks; chunk {step:.0f} cycles (median, warp 0's releases); "
              f"release spread across warps: median {spread.median():.0f}, max {spread.max():.0f} cycles")
        for w in range(16):
            print(f"  warp {w:2d} {roles[w]:8s} wait {wait[:, w].median():6.0f} (mean {wait[:, w].mean():6.0f})  "
                  f"last to arrive in {100 * (last == w).double().mean():5.1f}% of barriers  "
                  f"clock offset vs warp 0 {offset[:, w, 0].median():6.0f}")


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
