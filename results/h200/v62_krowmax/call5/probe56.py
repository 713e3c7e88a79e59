"""Where gd_wsh_kernel's chunk goes (v56_kuni, v57, v58 or v59 at large; probe54 with the anchors of v56's update and v57's Vt^T
pieces; for v57 "A Vt" is the combine after Q S0, whose last group holds A Vt's wgmma): lane 0 of every warp stores the low 32 bits of clock64 at
marks of its chunk loop, per CTA, warp and chunk (first 128 chunks), to global memory. Prep warps, for the chunk they
prepare: 0 on entering the preparation (after the producers' barrier), 1 after the scan and the fp16 split, 2 after
the vote (a prep barrier), 3 after A (the first prep warpgroup; the others: at the vote; v58: prep warps 5 and 6 after
K^T Vt's k split), 5 arrival at the CTA barrier. Load warp: 0 before its wait for the
inputs, 6 after it, 7 after issuing chunk c+2's cp.async, 5 arrival. Consumers, chunk c: 0 at the loop top (after the CTA barrier), 1 after the Vt^T
fragments, 2 after Q S0 and its unscaling, 3 after A Vt, 4 after the y stores, 6 after K^T Vt's wait (the fp16
repack of Vt^T in it), 7 after the update, 5 arrival at the CTA barrier. v61 (the state split before the barrier, the Vt^T fragments after Q S0): 0 at the loop top, 1 after Q S0, 2
after the Vt^T fragments; "to arrival" holds the next chunk's split. A clock read right after `bar.sync` may
run before the barrier releases, so a phase that starts at a barrier holds the wait for it.
    python probe56.py FILE [--dry]"""
import sys
import types
from pathlib import Path

SHAPES = {"large": (8, 4096, 16, 128)}
NCH = 128


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]

    def sub(old, new, where="before", count=1):
        nonlocal src
        assert src.count(old) == count, (old, src.count(old))
        src = src.replace(old, {"before": new + old, "after": old + new, "replace": new}[where])

    def mark(m, c, ind, w="warp"):
        return (f"{' ' * ind}if (lane == 0 && ({c}) < {NCH}) g_pp[((blockIdx.x * 16 + ({w})) * {NCH} + ({c})) * 8 + {m}]"
                " = (unsigned)clock64();\n")

    pw_warp = "(pw + WshCfg::NCW)"
    sub("__device__ __forceinline__ void cta_sync()", f"__device__ unsigned g_pp[1024 * 16 * {NCH} * 8];\n")
    # prep (v54): 1 after the splits, 2 after the vote, 3 after A (first prep warpgroup) or at the vote
    sub("  wg_proxy_fence();  // the pieces visible to wgmma", mark(1, "c", 2, pw_warp))
    if "  if (safe) return;\n  if (pw < 4) {\n    wsh_amat(sm, nb, pw, gid, tig);\n" in src:  # v58: K^T Vt's k after the vote
        sub("  if (safe) return;\n  if (pw < 4) {\n", mark(2, "c", 2, pw_warp) + "  if (safe) {\n" + mark(3, "c", 2, pw_warp)
            + "  return;\n  }\n  if (pw < 4) {\n", "replace")
        sub("    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier\n  }\n}\n",
            "    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier\n  }\n" + mark(3, "c", 2, pw_warp) + "}\n",
            "replace")
    else:
        sub("  if (!safe && pw < 4) wsh_amat(sm, nb, pw, gid, tig);\n",
            mark(2, "c", 2, pw_warp) + "  if (!safe && pw < 4) wsh_amat(sm, nb, pw, gid, tig);\n" + mark(3, "c", 2, pw_warp), "replace")
    # load warp: 7 after issuing chunk c+2's cp.async (session 26)
    sub("          __pipeline_commit();\n        } else {\n          wsh_prepare(sm, ch + 1,",
        "          __pipeline_commit();\n" + mark(7, "ch + 1", 10) + "        } else {\n          wsh_prepare(sm, ch + 1,", "replace")
    sub("          wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);\n", mark(0, "ch + 1", 10))
    sub("    if (!loader) wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);\n    cta_sync();\n"
        "    for (int ch = 0; ch < nchunks; ++ch) {\n      if (ch + 1 < nchunks) {\n"
        "        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed\n",
        "    if (!loader) wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);\n    cta_sync();\n"
        "    for (int ch = 0; ch < nchunks; ++ch) {\n      if (ch + 1 < nchunks) {\n" + mark(0, "ch + 1", 8)
        + "        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed\n"
        + "        if (loader) {\n" + mark(6, "ch + 1", 10) + "        }\n", "replace")
    sub("      cta_sync();  // chunk c consumed; chunk c+1 prepared\n    }\n    return;\n  }\n\n"
        "  // ---- consumers: warpgroup w owns S^T rows 64 w .. 64 w + 63; this warp rows j0 and j0 + 8.\n"
        "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" ::\"n\"(W::REG_C));",
        mark(5, "ch + 1", 6))
    # consumers (gd_wsh_kernel only: its unique lines)
    vt = "      wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);\n"
    if "wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cfs, j0, tig);" in src:
        vt = "      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cfs, j0, tig);\n"
    presplit = "uint32_t ph[8][4], pl[8][4];" in src  # v61: Q S0 before the Vt^T fragments
    if presplit:
        top = "    if (!sfl[nb]) {\n      const float* cfs = sm + W::CF + nb * C;\n      uint32_t vh[4][4], vl[4][4];\n"
        sub(top, mark(0, "ch", 6), "after", count=2)
        sub(vt + "      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores\n",
            mark(1, "ch", 6) + vt + mark(2, "ch", 6) + "      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores\n",
            "replace")
    else:
        sub(vt, mark(0, "ch", 6) + vt + mark(1, "ch", 6), "replace")
        sub("      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores\n", mark(2, "ch", 6))
    sub("      if (n == C) {\n        float* yr = yb + 2 * tig * rs + j0;\n", mark(3, "ch", 6), count=2)
    sub("      if (ch + 1 == nchunks) {\n        cta_sync();\n        break;  // the last chunk: no state after it\n      }\n"
        "      // ---- S^T = G_C (S^T + Vt^T K): Vt^T", mark(4, "ch", 6))
    upd = "      const float GC = gsc[C - 1];\n      const float rkc = sm[W::RK + nb * DP];\n"
    if upd not in src:  # v59: a K scale a block of 32 columns
        upd = "      const float GC = gsc[C - 1];\n      const float4 rkb = "
    sub(upd, mark(6, "ch", 6))
    sub("    } else {\n      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them", mark(7, "ch", 6))
    sub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n\n"
        "void launch_wsh(", mark(5, "ch + 1", 4))
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PP_SRC],", "replace")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PP_SRC = r"""\n'
        f'torch::Tensor pp_read() {{ auto t = torch::empty({{1024 * 16 * {NCH} * 8}}, torch::kInt32);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int32_t>(), g_pp, sizeof(unsigned) * 1024 * 16 * {NCH} * 8); return t; }}\n"""\n'
        f'CPP_SRC = "torch::Tensor pp_read(); void sgd_{ver}_forward(', "replace")
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "pp_read"],', "replace")
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_pp_probe",', "replace")
    PRESPLIT[0] = presplit
    return src


PRESPLIT = [False]


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
        p = ext.pp_read().view(1024, 16, NCH, 8)[: B * H].long()
        rel = lambda a, b: ((a - b + (1 << 31)) % (1 << 32) - (1 << 31)).double()  # signed 32-bit differences
        med = lambda x: x.median().item()
        c = slice(2, n - 1)  # steady-state chunks
        arr0 = p[:, 0, :, 5]  # consumer warp 0's arrival at the end of chunk c - 1 (index c)
        step = med(rel(arr0[:, 3:n], arr0[:, 2:n - 1]))
        print(f"{path.stem} {name}: {B * H} CTAs x chunks 2..{n - 2}; chunk {step:.0f} cycles (median, consumer warp 0's "
              f"arrival to arrival). Medians over CTAs and chunks, cycles; arrivals against consumer warp 0's:")
        for w in range(16):
            r = p[:, w]
            arrive = med(rel(r[:, 3:n, 5], arr0[:, 3:n]))
            if w < 8:
                ph = {"top->Vt": (1, 0), "Q S0": (2, 1)} if not PRESPLIT[0] else {"Q S0 (top)": (1, 0), "Vt": (2, 1)}
                ph |= {"A Vt": (3, 2), "y": (4, 3), "K^T Vt": (6, 4), "update": (7, 6)}
                parts = ", ".join(f"{k} {med(rel(r[:, c, a], r[:, c, b])):5.0f}" for k, (a, b) in ph.items())
                tail = med(rel(r[:, 3:n, 5], r[:, 2:n - 1, 7]))
                wait = med(rel(r[:, 3:n - 1, 0], r[:, 3:n - 1, 5]))
                print(f"  warp {w:2d} consumer arrival {arrive:+6.0f}; {parts}, to arrival {tail:5.0f}, barrier {wait:5.0f}")
            elif w == 15:
                wait = med(rel(r[:, 3:n, 6], r[:, 3:n, 0]))
                issue = med(rel(r[:, 3:n - 2, 7], r[:, 3:n - 2, 6]))
                print(f"  warp {w:2d} load     arrival {arrive:+6.0f}; its wait for the inputs {wait:6.0f}, "
                      f"its cp.async issue {issue:6.0f}")
            else:
                ph = [med(rel(r[:, 3:n, i + 1], r[:, 3:n, i])) for i in range(3)]
                tail = med(rel(r[:, 3:n, 5], r[:, 3:n, 3]))
                print(f"  warp {w:2d} prep     arrival {arrive:+6.0f}; scan+split {ph[0]:5.0f}, vote {ph[1]:5.0f}, "
                      f"A {ph[2]:5.0f}, to arrival {tail:5.0f}")


for arg in [a for a in sys.argv[1:] if a != "--dry"]:
    main(Path(arg))
