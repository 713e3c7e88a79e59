"""Every warp of gd_wsg_kernel<DP>: its busy and waiting cycles a chunk around the loop's CTA barrier (lane 0 of each
warp, clock64 before and after each barrier, summed per CTA and warp), at medium and large, for the file's kernel.
    python probe45.py FILE [FILE ...] [--dry]"""
import sys
import types
from pathlib import Path

SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, new)

    sub("__device__ __forceinline__ void cta_sync()", "__device__ unsigned long long g_wb[1024 * 16 * 2];\n"
        "__device__ __forceinline__ void cta_sync()")
    # producers (prep and load warps)
    sub("    cta_sync();\n    for (int ch = 0; ch < nchunks; ++ch) {\n      if (ch + 1 < nchunks) {",
        "    cta_sync();\n    long long w_tb = clock64();\n    unsigned long long w_busy = 0, w_wait = 0;\n"
        "    for (int ch = 0; ch < nchunks; ++ch) {\n      if (ch + 1 < nchunks) {")
    sub("      cta_sync();  // chunk c consumed; chunk c+1 prepared\n    }\n    return;\n",
        "      { const long long ta = clock64(); w_busy += ta - w_tb; cta_sync(); w_tb = clock64(); w_wait += w_tb - ta; }\n"
        "    }\n    if (lane == 0) { g_wb[(blockIdx.x * 16 + warp) * 2] = w_busy; g_wb[(blockIdx.x * 16 + warp) * 2 + 1] = w_wait; }\n"
        "    return;\n")
    # consumers
    sub("  cta_sync();\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;",
        "  cta_sync();\n  long long w_tb = clock64();\n  unsigned long long w_busy = 0, w_wait = 0;\n"
        "  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;")
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n",
        "    { const long long ta = clock64(); w_busy += ta - w_tb; cta_sync(); w_tb = clock64(); w_wait += w_tb - ta; }\n"
        "  }\n  if (lane == 0) { g_wb[(blockIdx.x * 16 + warp) * 2] = w_busy; g_wb[(blockIdx.x * 16 + warp) * 2 + 1] = w_wait; }\n}\n")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + WB_SRC],")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'WB_SRC = r"""\n'
        'torch::Tensor wb_read() { auto t = torch::empty({1024 * 16 * 2}, torch::kInt64);\n'
        '  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_wb, sizeof(unsigned long long) * 1024 * 16 * 2); return t; }\n"""\n'
        f'CPP_SRC = "torch::Tensor wb_read(); void sgd_{ver}_forward(')
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "wb_read"],')
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_wb_probe",')
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probewb_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probewb_{path.stem}")
    exec(compile(src, str(out), "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    for name, (B, T, H, D) in SHAPES.items():
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
        gate = torch.sigmoid(torch.randn((B, T, H), device="cuda", generator=g) + 2.0)
        args = [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
        rows = []
        for _ in range(5):  # each call overwrites the sums; keep the median per warp over calls
            model(*args)
            torch.cuda.synchronize()
            rows.append(ext.wb_read().view(1024, 16, 2)[: B * H].double() / ((T + 31) // 32))
        c = torch.stack(rows).median(0).values  # [CTA, warp, busy / wait]
        roles = ["consumer"] * (D // 16) + ["prep"] * (16 - D // 16 - 1) + ["load"]
        print(f"{path.stem} {name}: cycles a chunk per warp, mean over {B * H} CTAs (busy / waiting at the loop's barrier)")
        for w in range(16):
            print(f"  warp {w:2d} {roles[w]:8s} busy {c[:, w, 0].mean():6.0f} (max {c[:, w, 0].max():6.0f})  "
                  f"wait {c[:, w, 1].mean():6.0f} (min {c[:, w, 1].min():6.0f})")


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
