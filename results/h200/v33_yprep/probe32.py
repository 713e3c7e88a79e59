"""Where v29's, v31's and v32's gd_wsg_kernel<DP> spends a chunk, per role, at medium (D = 64) and large (D = 128): clock() marks by the
first thread of each role (consumer warp 0, prep warp 0, load warp 0) of each CTA, summed per phase into a per-CTA
__device__ array. Marks before the chunk loop (chunk 0's prep) are not counted; the load role is the load warp's lane 0.
    python3 probe29.py FILE [FILE ...] [--dry]"""
import sys
import types
from pathlib import Path

PHASES = [("consumer", "C0 CTA barrier wait"), ("consumer", "C1 Q S0 (wgmma, a wait a group)"),
          ("consumer", "C2a Vt frags"), ("consumer", "C3 K^T Vt (wgmma) + state update"),
          ("prep", "P0 CTA barrier + inputs wait"), ("prep", "P1 split q, K^T"), ("prep", "P2 scan + vote"),
          ("prep", "P3 A tiles"),
          ("load", "L0 CTA barrier + wait_prior + producer sync"), ("load", "L1 issue chunk c+2"),
          ("consumer", "C2b A Vt (mma.sync)"), ("consumer", "C2c y stores (v31: to the staging rows)"),
          ("load", "L2 y stores of chunk c-1 (v31)"), ("prep", "P4 y stores of chunk c-1 (v32)")]
NP = len(PHASES)
SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new, where="before", count=1):
        nonlocal src
        assert src.count(old) == count, (old, src.count(old))
        src = src.replace(old, {"before": new + old, "after": old + new, "replace": new}[where])

    pm = lambda me, role, i: f"pmark({me}, {role}, {i});\n"
    now = "unsigned now; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(now) :: \"memory\");"
    sub("__device__ __forceinline__ void cta_sync()",
        f"__device__ unsigned long long g_phase[1024 * {NP}];\n__shared__ unsigned pm_last_s[3];\n__shared__ int pm_go[3];\n"
        "__device__ __forceinline__ void pmark(bool me, int role, int i) {\n"
        f"  if (me) {{\n    {now}\n"
        f"    if (pm_go[role]) atomicAdd(&g_phase[blockIdx.x * {NP} + i], (unsigned long long)(now - pm_last_s[role]));\n"
        "    pm_last_s[role] = now;\n  }\n}\n")
    # consumers
    sub("  for (int i = tid; i < W::TOTAL; i += 512) sm[i] = 0.f;\n",
        "  if (tid == 0) { pm_go[0] = 0; pm_go[1] = 0; pm_go[2] = 0; }\n", "after")
    sub("  cta_sync();\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;",
        f"  cta_sync();\n  if (tid == 0) {{ {now} pm_last_s[0] = now; pm_go[0] = 1; }}\n"
        "  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;", "replace")
    sub("      // Vt^T fragments (A operand, rows j, k = s) for every s step, split.\n      const float* cfs",
        "      " + pm("tid == 0", 0, 1))
    sub("      // + Vt^T A^T, mma.sync\n", "      " + pm("tid == 0", 0, 2))
    y_anchor = ("      // y(c) = G_t O^T into the staging rows" if "// y(c) = G_t O^T into the staging rows" in src
                else "      // y(c) = G_t O^T, rows t < n")
    sub(y_anchor, "      " + pm("tid == 0", 0, 10))
    sub("      // ---- S^T = G_C (S^T + Vt^T K): a fresh 64 x 64 accumulator for each", "      " + pm("tid == 0", 0, 11))
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n",
        "    " + pm("tid == 0", 0, 3) + "    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n    "
        + pm("tid == 0", 0, 0), "replace")
    # producers
    loop_head = ("    cta_sync();\n    for (int ch = 0; ch < nchunks; ++ch) {\n      if constexpr (W::YLW) {"
                 if "      if constexpr (W::YLW) {\n        if (!loader && ch >= 1)" in src else
                 "    cta_sync();\n    for (int ch = 0; ch < nchunks; ++ch) {\n      if (!loader && ch >= 1)"
                 if "wsg_store_y<DP>(sm, y, b, h, T, H, ch - 1, ptid);" in src else
                 "    cta_sync();\n    for (int ch = 0; ch < nchunks; ++ch) {\n      if (ch + 1 < nchunks) {")
    sub(loop_head,
        f"    cta_sync();\n    if (ptid == 0 || (loader && lt == 0)) {{ {now} pm_last_s[loader ? 2 : 1] = now; pm_go[loader ? 2 : 1] = 1; }}\n"
        + loop_head.split("cta_sync();\n", 1)[1], "replace")
    sub("        producer_sync<W::NPROD>();  // chunk c+1's inputs visible\n",
        "        " + pm("loader && lt == 0", 2, 8) + "        " + pm("ptid == 0", 1, 4), "after")
    sub("          __pipeline_commit();\n        } else {", "          " + pm("loader && lt == 0", 2, 9))
    sub("  // k: every row value is read before K^T hi lands over the rows.\n", "  " + pm("ptid == 0", 1, 5), "after")
    sub("  // Gate scan (every prep warp; warp 0 publishes G and beta / G).", "  " + pm("ptid == 0", 1, 5))
    sub("  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;\n", "  " + pm("ptid == 0", 1, 6), "after")
    sub("  wsg_atile<DP>(sm, c, pw, gid, tig);\n", "  " + pm("ptid == 0", 1, 7), "after")
    sub("      cta_sync();  // chunk c consumed; chunk c+1 prepared\n",
        "      cta_sync();  // chunk c consumed; chunk c+1 prepared\n      " + pm("loader && lt == 0", 2, 8) + "      "
        + pm("ptid == 0", 1, 4), "replace")
    if "wsg_store_y<DP>(sm, y, b, h, T, H, ch - 1, ptid);" in src:
        sub(next(l + "\n" for l in src.split("\n") if "if (!loader && ch >= 1) wsg_store_y<DP>(" in l),
            "        " + pm("ptid == 0", 1, 13), "after")
    if "wsg_store_y<DP>(sm, y, b, h, T, H, ch - 1, lt);" in src:
        sub("        if (loader && ch >= 1) wsg_store_y<DP>(sm, y, b, h, T, H, ch - 1, lt);  // staged and published last chunk\n",
            "        " + pm("loader && lt == 0", 2, 12), "after")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PHASE_SRC],", "replace")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PHASE_SRC = r"""\n'
        f'torch::Tensor phase_read() {{ auto t = torch::empty({{1024 * {NP}}}, torch::kInt64);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_phase, sizeof(unsigned long long) * 1024 * {NP}); return t; }}\n'
        f'void phase_reset() {{ static unsigned long long z[1024 * {NP}] = {{0}}; cudaMemcpyToSymbol(g_phase, z, sizeof(z)); }}\n"""\n'
        f'CPP_SRC = "torch::Tensor phase_read(); void phase_reset(); void sgd_{ver}_forward(', "replace")
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "phase_read", "phase_reset"],', "replace")
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_phase_probe",', "replace")
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probe_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probe_{path.stem}")
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
        ext.phase_reset()
        runs = 10
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            model(*args)
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) / runs * 1e3
        c = ext.phase_read().view(1024, NP)[: B * H].double()
        chunks = runs * ((T + 31) // 32)
        per = c / chunks
        print(f"{path.stem} {name}: {us:.1f} us per call (events, back to back), {B * H} CTAs, {chunks // runs} chunks")
        for role in ("consumer", "prep", "load"):
            idx = [i for i, (r, _) in enumerate(PHASES) if r == role]
            tot = per[:, idx].sum(1)
            print(f"  {role}: chunk {tot.mean():.0f} cycles (CTA min {tot.min():.0f}, max {tot.max():.0f})")
            for i in idx:
                m = per[:, i].mean().item()
                print(f"    {PHASES[i][1]:45s} {m:7.0f}  {100 * m / tot.mean():5.1f}%")


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
