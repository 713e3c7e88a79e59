"""Where v22's (or a later file's) gd_wg_kernel spends a chunk at large: clock() marks by thread 0 (warpgroup 0) and thread 256
(warpgroup 2) of each CTA, summed per phase into a per-CTA __device__ array with 64-bit atomics.
    python3 phase_probe22.py FILE [FILE ...]      (--dry: write the probe sources only)"""
import sys
import types
from pathlib import Path

PHASES = ["P0 wait inputs + top barrier", "P1 store y(c-1) (v22 scalar: + next loads)", "P2 split q, K^T",
          "P3 scan + vote (v22 channel: + loads; v26: + Q S0 half 1)", "P4 A tiles (+channel G, Vt)", "P5 A-tile barrier",
          "P6 Q S0 (wgmma, 2 waits; v26: wait + half 2)", "P7 Vt frags + A Vt (mma.sync) + O store", "P8 K^T Vt (wgmma + wait)",
          "P9 state update"]
NP = len(PHASES)


def make_source(path: Path):
    src = path.read_text()
    chan = "channel" in path.parent.name
    tag = "cgd" if chan else "sgd"
    ver = path.stem.split("_")[0]

    def sub(old, new, where="before"):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, {"before": new + old, "after": old + new, "replace": new}[where])

    pm = lambda i: (f"{{ if ((tid & 255) == 0) {{ unsigned now; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(now) :: \"memory\");"
                    f" atomicAdd(&g_phase[(blockIdx.x * 2 + (tid >> 8)) * {NP} + {i}], (unsigned long long)(now - pm_last));"
                    f" pm_last = now; }} }}\n")
    sub("template <bool CHAN>\n__global__ void __launch_bounds__(512, 1)\ngd_wg_kernel(",
        f"__device__ unsigned long long g_phase[512 * {NP}];\n")
    sub("  const int nchunks = (T + C - 1) / C;\n  wg_load_chunk<CHAN>(",
        "  unsigned pm_last; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(pm_last) :: \"memory\");\n")
    sub("    __syncthreads();  // this chunk's inputs landed; the previous chunk's O partials (and G) complete\n", pm(0), "after")
    sub("    float* qs = cur + Wf::QB;\n    float* ksm = cur + Wf::KR;\n    float* vsm = cur + Wf::VR;\n    float* gsm = cur + Wf::GR;\n    const float* bsm = cur + Wf::BR;\n\n    // ---- split: q in place", pm(1))
    sub("    // ---- gate scan (gd_tc_kernel's)\n    int pred = 0;\n    float GC0 = 1.f, GC1 = 1.f, cf = 0.f;\n    float gv[8];", pm(2))
    sub("      // ---- A = causal(Q K^T): tiles (mtA, ns) with ns <= 2 mtA + 1 (6 tiles)", pm(3))
    sub("      wg_proxy_fence();\n      __syncthreads();  // A tiles, split q / K^T", pm(4))
    sub("      __syncthreads();  // A tiles, split q / K^T (and channel G, Vt) visible, to the tensor core's reads too\n", pm(5), "after")
    sub("      // Vt^T fragments (A operand, rows j, k = s) for every s step, split.\n      uint32_t vh[NKS][4]", pm(6))
    sub("      // ---- S^T = G_C (S^T + Vt^T K): a fresh 64 x 64 accumulator", pm(7))
    sub("#pragma unroll\n      for (int kk = 0; kk < NI; ++kk) {\n        S[kk][0] = (S[kk][0] + acc[kk][0]) * GC0;", pm(8))
    sub("    psafe = safe;\n  }\n  __syncthreads();\n  const int lt0 = (nchunks - 1) * C;\n  store_y<128, CHAN, Wf>", pm(9))
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PHASE_SRC],", "replace")
    sub(f'CPP_SRC = "void {tag}_{ver}_forward(',
        'PHASE_SRC = r"""\n'
        f'torch::Tensor phase_read() {{ auto t = torch::empty({{512 * {NP}}}, torch::kInt64);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_phase, sizeof(unsigned long long) * 512 * {NP}); return t; }}\n'
        f'void phase_reset() {{ static unsigned long long z[512 * {NP}] = {{0}}; cudaMemcpyToSymbol(g_phase, z, sizeof(z)); }}\n"""\n'
        f'CPP_SRC = "torch::Tensor phase_read(); void phase_reset(); void {tag}_{ver}_forward(', "replace")
    sub(f'functions=["{tag}_{ver}_forward"],', f'functions=["{tag}_{ver}_forward", "phase_read", "phase_reset"],', "replace")
    sub(f'name="{tag}_{path.stem}",', f'name="{tag}_{ver}_phase_probe",', "replace")
    return src, chan, tag, ver


def probe(path: Path, dry: bool):
    src, chan, tag, ver = make_source(path)
    out = Path(__file__).with_name(f"probe_{ver}_{tag}.py")
    out.write_text(src)
    if dry:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probe_{tag}")
    exec(compile(src, str(out), "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    for shape, (B, T, H, D) in {"large": (8, 4096, 16, 128)}.items():
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
        gate = torch.sigmoid(torch.randn((B, T, H, D) if chan else (B, T, H), device="cuda", generator=g) + 2.0)
        args = [q, k, v, gate] if chan else [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
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
        c = ext.phase_read().view(256, 2, NP)[: B * H].double()
        chunks = runs * ((T + 31) // 32)
        per = c / chunks  # [cta, role, phase] cycles per chunk
        print(f"{path.parent.name} {shape}: {us:.1f} us per call (events, back to back), {B * H} CTAs, {chunks // runs} chunks")
        for r, who in enumerate(["thread 0 (warpgroup 0)", "thread 256 (warpgroup 2)"]):
            tot = per[:, r].sum(1)
            print(f"  {who}: chunk {tot.mean():.0f} cycles (CTA min {tot.min():.0f}, max {tot.max():.0f})")
            for i, name in enumerate(PHASES):
                m = per[:, r, i].mean().item()
                print(f"    {name:45s} {m:7.0f}  {100 * m / tot.mean():5.1f}%")


dry = "--dry" in sys.argv
for name in [a for a in sys.argv[1:] if a != "--dry"]:
    probe(Path(name), dry)
