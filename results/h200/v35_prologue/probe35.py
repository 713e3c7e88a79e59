"""How long gd_wsg_kernel<DP>'s prologue and chunk loop take, per CTA: %globaltimer and clock64 at kernel entry (thread 0), at the
consumers' loop start and at their loop end, one call at a time at medium and large (medians over 10 calls).
    python probe35.py FILE [FILE ...] [--dry]"""
import statistics
import sys
import types
from pathlib import Path

SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}
GT = "__device__ __forceinline__ unsigned long long pro_now() { unsigned long long t; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); return t; }\n"


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new, where):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, {"before": new + old, "after": old + new, "replace": new}[where])

    sub("__device__ __forceinline__ void cta_sync()", "__device__ unsigned long long g_pro[1024 * 6];\n" + GT, "before")
    sub("  for (int i = tid; i < W::TOTAL; i += 512) sm[i] = 0.f;\n  __syncthreads();\n\n  const int nchunks",
        "  if (tid == 0) { g_pro[blockIdx.x * 6 + 0] = pro_now(); g_pro[blockIdx.x * 6 + 3] = clock64(); }\n", "before")
    sub("  cta_sync();\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;",
        "  cta_sync();\n  if (tid == 0) { g_pro[blockIdx.x * 6 + 1] = pro_now(); g_pro[blockIdx.x * 6 + 4] = clock64(); }\n"
        "  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;", "replace")
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n",
        "    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n"
        "  if (tid == 0) { g_pro[blockIdx.x * 6 + 2] = pro_now(); g_pro[blockIdx.x * 6 + 5] = clock64(); }\n}\n", "replace")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PRO_SRC],", "replace")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PRO_SRC = r"""\n'
        'torch::Tensor pro_read() { auto t = torch::empty({1024 * 6}, torch::kInt64);\n'
        '  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_pro, sizeof(unsigned long long) * 1024 * 6); return t; }\n"""\n'
        f'CPP_SRC = "torch::Tensor pro_read(); void sgd_{ver}_forward(', "replace")
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "pro_read"],', "replace")
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_pro_probe",', "replace")
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probepro_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probepro_{path.stem}")
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
        nch = (T + 31) // 32
        rows = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*args)
            end.record()
            torch.cuda.synchronize()
            c = ext.pro_read().view(1024, 6)[: B * H].double()
            t0 = c[:, 0].min()
            rows.append((start.elapsed_time(end) * 1e3, (c[:, 0] - t0).max().item() / 1e3,
                         ((c[:, 1] - c[:, 0]) / 1e3).mean().item(), ((c[:, 2] - c[:, 1]) / 1e3).mean().item(),
                         (c[:, 2].max() - t0).item() / 1e3, (c[:, 4] - c[:, 3]).mean().item(),
                         ((c[:, 5] - c[:, 4]) / nch).mean().item()))
        med = [statistics.median(r[i] for r in rows) for i in range(7)]
        print(f"{path.stem} {name}: call {med[0]:.1f} us (events); CTA entry spread {med[1]:.2f} us; prologue "
              f"{med[2]:.2f} us; chunk loop {med[3]:.1f} us ({1e3 * med[3] / nch:.0f} ns a chunk, {nch} chunks); "
              f"first entry to last loop end {med[4]:.1f} us; SM cycles: prologue {med[5]:.0f}, a chunk {med[6]:.0f}", flush=True)


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
