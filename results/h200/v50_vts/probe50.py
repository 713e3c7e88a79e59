"""Where v50a_vts's consumer chunk goes: probe47 (../v49_ystore/) with its marks 2 and 4 moved to v50's code. Lane 0
of consumer warp 0 (and of warp 4, warpgroup 1, at D = 128) stores the low 32 bits of clock64 at each mark of the
consumer's chunk loop to global memory, per CTA, warpgroup and chunk. Phases: barrier (the previous chunk's end to the
loop top; the clock read after `bar.sync` does not wait for its release, so part of the wait shows in the next
phase), Vt fragments (D = 128; nothing at D = 64), Q S0, then at D = 64 K^T Vt's issue from shared memory with the
Vt fragment loads and A Vt's mma.sync issue (at D = 128 A Vt only), y stores, K^T Vt's wait (at D = 128 its issue and
wait), state update. Safe-path chunks count in "barrier" to "update" as one.
    python probe50.py FILE [--dry]"""
import sys
import types
from pathlib import Path

SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}
NAMES = ["barrier", "Vt frags", "Q S0", "K^T Vt issue + A Vt", "y stores", "K^T Vt wait", "update"]


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new, where="before"):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, {"before": new + old, "after": old + new, "replace": new}[where])

    def ph(i, ind):
        return f"{' ' * ind}if (ph_on) ph_rec[ch * 8 + {i}] = (unsigned)clock64();\n"

    sub("__device__ __forceinline__ void cta_sync()", "__device__ unsigned g_ph[1024 * 2 * 128 * 8];\n")
    sub("  cta_sync();\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;\n",
        "  const bool ph_on = lane == 0 && (warp == 0 || (DP == 128 && warp == 4));\n"
        "  unsigned* ph_rec = g_ph + (blockIdx.x * 2 + (warp == 4)) * 128 * 8;\n"
        "  cta_sync();\n  if (ph_on) ph_rec[7] = (unsigned)clock64();\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;\n"
        + ph(0, 4), "replace")
    sub("      // ---- O^T = S^T Q^T: DP / 8 k steps", ph(1, 6))
    sub("      float acc[NA][8][4];\n      if constexpr (W::VTS) {\n", ph(2, 6))
    sub("      // ---- S^T = G_C (S^T + Vt^T K), issued before the y stores", ph(3, 6))
    sub("      if constexpr (!W::KVE && !W::VTS) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);\n", ph(4, 6))
    sub("      const float GC = gsc[C - 1];\n#pragma unroll\n      for (int a = 0; a < NA; ++a)\n", ph(5, 6))
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n",
        "    if (ph_on) {\n      const unsigned tc = (unsigned)clock64();\n      ph_rec[ch * 8 + 6] = tc;\n"
        "      if (ch + 1 < nchunks) ph_rec[(ch + 1) * 8 + 7] = tc;\n    }\n"
        "    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n", "replace")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PH_SRC],", "replace")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PH_SRC = r"""\n'
        'torch::Tensor ph_read() { auto t = torch::empty({1024 * 2 * 128 * 8}, torch::kInt32);\n'
        '  cudaMemcpyFromSymbol(t.data_ptr<int32_t>(), g_ph, sizeof(unsigned) * 1024 * 2 * 128 * 8); return t; }\n"""\n'
        f'CPP_SRC = "torch::Tensor ph_read(); void sgd_{ver}_forward(', "replace")
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "ph_read"],', "replace")
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_ph_probe",', "replace")
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probeph_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probeph_{path.stem}")
    exec(compile(src, str(out), "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    for name, (B, T, H, D) in SHAPES.items():
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
        gate = torch.sigmoid(torch.randn((B, T, H), device="cuda", generator=g) + 2.0)
        args = [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
        rows = []
        for rep in range(6):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            model(*args)
            b.record()
            b.synchronize()
            if rep >= 1:
                rows.append((a.elapsed_time(b) * 1000, ext.ph_read().view(1024, 2, 128, 8)[: B * H].long()))
        rows.sort(key=lambda r: r[0])
        us, p = rows[len(rows) // 2]
        n = (T + 31) // 32
        for wg in range(2 if D == 128 else 1):
            r = p[:, wg, :n]  # [CTA, chunk, mark]: marks 0..6, then 7 = the previous chunk's end (before its barrier)
            r = torch.cat([r[:, :, 7:8], r[:, :, :7]], 2)
            d = (r[:, :, 1:] - r[:, :, :-1]) % (1 << 32)  # cycles in each phase [CTA, chunk, 7]
            per = d[:, 1:].double().mean(1)  # chunk 0's "barrier" is the prologue's: left out
            med = per.median(0).values
            print(f"{path.stem} {name} warpgroup {wg}: call {us:.1f} us (events, median of 5); cycles a chunk, median "
                  f"over {B * H} CTAs: total {per.sum(1).median():.0f} (chunks 1..{n - 1}); "
                  + ", ".join(f"{n} {m:.0f}" for n, m in zip(NAMES, med.tolist())), flush=True)


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
