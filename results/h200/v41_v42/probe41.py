"""Which role of gd_wsg_kernel<DP> waits for the other: clock64 around the loop's CTA barrier, by the first prep thread
and by consumer thread 0 of each CTA, summed over chunks (one atomicAdd a chunk), at medium and large.
    python probe41.py FILE [FILE ...] [--dry]"""
import sys
import types
from pathlib import Path

SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new, counts=(1,)):
        nonlocal src
        assert src.count(old) in counts, (old, src.count(old))
        src = src.replace(old, new)

    sub("__device__ __forceinline__ void cta_sync()", "__device__ unsigned long long g_bw[1024 * 2];\n"
        "__device__ __forceinline__ void cta_sync()")
    sub("      cta_sync();  // chunk c consumed; chunk c+1 prepared\n",
        "      { const long long ta = clock64(); cta_sync(); if (ptid == 0) atomicAdd(&g_bw[blockIdx.x * 2 + 0], "
        "(unsigned long long)(clock64() - ta)); }\n")
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n",
        "    { const long long ta = clock64(); cta_sync(); if (threadIdx.x == 0) atomicAdd(&g_bw[blockIdx.x * 2 + 1], "
        "(unsigned long long)(clock64() - ta)); }\n", (1, 2))
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + BW_SRC],")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'BW_SRC = r"""\n'
        'torch::Tensor bw_read() { auto t = torch::empty({1024 * 2}, torch::kInt64);\n'
        '  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_bw, sizeof(unsigned long long) * 1024 * 2); return t; }\n'
        'void bw_reset() { static unsigned long long z[1024 * 2] = {0}; cudaMemcpyToSymbol(g_bw, z, sizeof(z)); }\n"""\n'
        f'CPP_SRC = "torch::Tensor bw_read(); void bw_reset(); void sgd_{ver}_forward(')
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "bw_read", "bw_reset"],')
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_bw_probe",')
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probebw_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probebw_{path.stem}")
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
        ext.bw_reset()
        runs = 10
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            model(*args)
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) / runs * 1e3
        c = ext.bw_read().view(1024, 2)[: B * H].double() / (runs * ((T + 31) // 32))
        print(f"{path.stem} {name}: {us:.1f} us a call (events, back to back); cycles a chunk waiting at the loop's "
              f"CTA barrier: prep {c[:, 0].mean():.0f} (CTA min {c[:, 0].min():.0f}), consumers {c[:, 1].mean():.0f} "
              f"(min {c[:, 1].min():.0f})")


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
