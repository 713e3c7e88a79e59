"""Where the prep warps' chunk goes: lane 0 of every warp of gd_wsg_kernel<DP> stores the low 32 bits of clock64 at
marks of its chunk loop, per CTA, warp and chunk (first 128 chunks), to global memory. Prep warps, for the chunk c
they prepare: 0 before the producers' barrier, 1 after the q split, 2 after the k split (its named barrier inside),
3 after the gate scan and vote, 4 after the A tile (warps without one: at their return), 5 arrival at the CTA barrier
that ends chunk c - 1. Load warp: 0 before its wait for chunk c's inputs, 6 after that wait, 5 arrival. Consumer
warps (D = 64 only): 5 arrival (the end of chunk c - 1); at D = 128 arrivals are read against the last producer's. A clock read right after `bar.sync` may run before the barrier releases
(SASS `BAR.SYNC.DEFER_BLOCKING`), so a phase that starts at a barrier holds the wait for it; the arrival marks and
the marks after the vote (`bar.red` returns a value) and after the load wait are exact.
    python probe51.py FILE [FILE ...] [--dry]"""
import sys
import types
from pathlib import Path

SHAPES = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}
NCH = 128


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new, where="before"):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, {"before": new + old, "after": old + new, "replace": new}[where])

    def mark(m, c, ind, w="warp"):
        return (f"{' ' * ind}if (lane == 0 && ({c}) < {NCH}) g_pp[((blockIdx.x * 16 + ({w})) * {NCH} + ({c})) * 8 + {m}]"
                " = (unsigned)clock64();\n")

    pw_warp = "(pw + WsgCfg<DP>::NCW)"
    sub("__device__ __forceinline__ void cta_sync()", f"__device__ unsigned g_pp[1024 * 16 * {NCH} * 8];\n")
    sub("  // k: every row value is read before K^T hi lands over the rows.", mark(1, "c", 2, pw_warp))
    sub("  // Gate scan (every prep warp; warp 0 publishes G and beta / G).\n", mark(2, "c", 2, pw_warp))
    sub("  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;\n", mark(3, "c", 2, pw_warp), "after")
    sub("  if (safe || pw >= 6) return;\n  wsg_atile<DP>(sm, c, pw, gid, tig);\n}\n",
        "  if (safe || pw >= 6) {\n" + mark(4, "c", 4, pw_warp) + "    return;\n  }\n  wsg_atile<DP>(sm, c, pw, gid, tig);\n"
        + mark(4, "c", 2, pw_warp) + "}\n", "replace")
    sub("        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed (the newer groups may not have)\n",
        mark(0, "ch + 1", 8) + "        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed (the newer groups may not have)\n"
        + "        if (loader) {\n" + mark(6, "ch + 1", 10) + "        }\n", "replace")
    sub("      cta_sync();  // chunk c consumed; chunk c+1 prepared\n", mark(5, "ch + 1", 6))
    # consumers: D = 64 only (at D = 128 the mark spills in the consumers, 144 bytes, and slows them)
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n",
        "    if constexpr (DP == 64) {\n" + mark(5, "ch + 1", 6) + "    }\n")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PP_SRC],", "replace")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PP_SRC = r"""\n'
        f'torch::Tensor pp_read() {{ auto t = torch::empty({{1024 * 16 * {NCH} * 8}}, torch::kInt32);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int32_t>(), g_pp, sizeof(unsigned) * 1024 * 16 * {NCH} * 8); return t; }}\n"""\n'
        f'CPP_SRC = "torch::Tensor pp_read(); void sgd_{ver}_forward(', "replace")
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "pp_read"],', "replace")
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_pp_probe",', "replace")
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probepp_{path.stem}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probepp_{path.stem}")
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
        p = ext.pp_read().view(1024, 16, NCH, 8)[: B * H, :, 2:n].long()  # chunks 2.. (steady state)
        rel = lambda a, b: ((a - b + (1 << 31)) % (1 << 32) - (1 << 31)).double()  # signed 32-bit differences
        nca = D // 16
        if D == 64:
            arr0, ref = p[:, 0:1, :, 5], "consumer warp 0"  # consumer warp 0's arrival
        else:  # the last producer's arrival (no consumer marks at D = 128)
            prod = p[:, nca:, :, 5]
            late = rel(prod, prod[:, :1]).argmax(1, keepdim=True)
            arr0, ref = prod.gather(1, late), "the last producer"
        step = rel(arr0[:, 0, 1:], arr0[:, 0, :-1]).median().item()
        print(f"{path.stem} {name}: {B * H} CTAs x chunks 2..{n - 1}; chunk {step:.0f} cycles (median, {ref}'s "
              f"arrival to arrival). Per warp, medians over CTAs and chunks, cycles; arrivals against {ref}'s:")
        for w in range(16):
            r = p[:, w]
            arrive = rel(r[..., 5], arr0[:, 0]).median().item()
            if w < nca:
                if D == 64:
                    print(f"  warp {w:2d} consumer arrival {arrive:+6.0f}")
                continue
            if w == 15:
                wait = rel(r[..., 6], r[..., 0]).median().item()
                print(f"  warp {w:2d} load     arrival {arrive:+6.0f}; its wait for chunk c's inputs {wait:6.0f}")
                continue
            ph = [rel(r[..., i + 1], r[..., i]).median().item() for i in range(4)]
            tail = rel(r[..., 5], r[..., 4]).median().item()
            start = rel(r[..., 0], arr0[:, 0]).median().item()
            print(f"  warp {w:2d} prep     arrival {arrive:+6.0f}; from the producers' barrier: q split {ph[0]:5.0f}, "
                  f"k split {ph[1]:5.0f}, scan+vote {ph[2]:5.0f}, A tile {ph[3]:5.0f}, to arrival {tail:5.0f}; "
                  f"iteration began {start:+6.0f}")


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
