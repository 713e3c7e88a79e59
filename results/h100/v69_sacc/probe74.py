"""Where gd_wsh_kernel's chunk goes in v63_tma (and files with its WSH_MARK hooks) at large: lane 0 of every warp stores
the low 32 bits of clock64 at each hook, per CTA, warp and chunk (first 128 chunks), to global memory.
Prep warps, for the chunk c they prepare: 0 at the loop top, 6 after the wait for chunk c's TMA and the producers'
barrier, 1 after round one (q or k split by step), 2 after the vote (a prep barrier), 3 after round two (A, or K^T
Vt's k split), 5 arrival at the CTA barrier; the last prep warp 7 after issuing chunk c+1's TMA. Consumers, chunk c:
0 at the loop top, 1 after the Vt^T fragments, 2 after Q S0, 3 after A Vt, 4 after the y stores, 6 after K^T Vt,
7 after the update, 5 arrival; v63 only: 8 after the consumers' mbarrier wait. A clock read right after `bar.sync` may run before the barrier releases, so a phase
that starts at a barrier holds the wait for it.
    python probe63.py FILE [--dry]

probe74 (session 34): with --lean, the consumers keep only marks 0 (loop top) and 5 (arrival), so that an
unserialized build (v74) keeps its wgmma asynchronous under the probe: probe63's eight consumer hooks took the
registers v74's fix needs and ptxas serialized it again. The prep's marks stay, the consumers' phases are not
timed, only their chunk and arrival.
    python probe74.py FILE [--dry] [--lean]"""
import sys
import types
from pathlib import Path

SHAPES = {"large": (8, 4096, 16, 128)}
NCH = 128
NB = 128  # CTAs recorded
NM = 16  # marks a warp and chunk


def make_source(path: Path):
    src = path.read_text()
    ver = path.stem.split("_")[0]
    if "--lean" in sys.argv:   # the consumers' loop starts at their chunk-top mark
        top = src.index("WSH_MARK(0, ch);")
        head, tail = src[:top], src[top:]
        for m in (1, 2, 3, 4, 6, 7):
            tail = tail.replace(f"WSH_MARK({m}, ch);", "/* lean probe: mark dropped */;")
        src = head + tail

    def sub(old, new):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, new)

    sub("#define WSH_MARK(m, c)  // a probe's hook\n",
        f"__device__ unsigned g_pp[{NB} * 16 * {NCH} * {NM}];\n"
        f"#define WSH_MARK(m, c) if ((threadIdx.x & 31) == 0 && (c) < {NCH} && blockIdx.x < {NB}) "
        f"g_pp[((blockIdx.x * 16 + (threadIdx.x >> 5)) * {NCH} + (c)) * {NM} + (m)] = (unsigned)clock64();\n")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PP_SRC],")
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PP_SRC = r"""\n'
        f'torch::Tensor pp_read() {{ auto t = torch::zeros({{{NB} * 16 * {NCH} * {NM}}}, torch::kInt32);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int32_t>(), g_pp, sizeof(unsigned) * {NB} * 16 * {NCH} * {NM}); return t; }}\n"""\n'
        f'CPP_SRC = "torch::Tensor pp_read(); void sgd_{ver}_forward(')
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "pp_read"],')
    sub(f'name="sgd_{path.stem}",', f'name="sgd_{path.stem.replace("_", "")}_pp_probe",')
    return src


def main(path):
    src = make_source(path)
    out = Path(__file__).with_name(f"probepp_{path.stem}{'_lean' if '--lean' in sys.argv else ''}.py")
    out.write_text(src)
    if "--dry" in sys.argv:
        print("wrote", out)
        return
    import torch
    module = types.ModuleType(f"probepp_{path.stem}")
    exec(compile(src, str(out), "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    import fcntl   # built in parallel, run one at a time: another process's kernels would stretch the clocks read
    lock = open("/tmp/probe74.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    for name, (B, T, H, D) in SHAPES.items():
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
        gate = torch.sigmoid(torch.randn((B, T, H), device="cuda", generator=g) + 2.0)
        args = [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
        for _ in range(3):
            model(*args)
        torch.cuda.synchronize()
        n = min(NCH, (T + 31) // 32)
        p = ext.pp_read().view(NB, 16, NCH, NM)[: min(NB, B * H)].long()
        rel = lambda a, b: ((a - b + (1 << 31)) % (1 << 32) - (1 << 31)).double()  # signed 32-bit differences
        med = lambda x: x.median().item()
        c = slice(2, n - 1)  # steady-state chunks
        arr0 = p[:, 0, :, 5]  # consumer warp 0's arrival at the end of chunk c - 1 (index c)
        step = med(rel(arr0[:, 3:n], arr0[:, 2:n - 1]))
        print(f"{path.stem} {name}: {p.shape[0]} CTAs x chunks 2..{n - 2}; chunk {step:.0f} cycles (median, consumer warp 0's "
              f"arrival to arrival). Medians over CTAs and chunks, cycles; arrivals against consumer warp 0's:")
        for w in range(16):
            r = p[:, w]
            arrive = med(rel(r[:, 3:n, 5], arr0[:, 3:n]))
            if w < 8:
                ph = {"top->Vt": (1, 0), "Q S0": (2, 1), "A Vt": (3, 2), "y": (4, 3), "K^T Vt": (6, 4), "update": (7, 6)}
                parts = ", ".join(f"{k} {med(rel(r[:, c, a], r[:, c, b])):5.0f}" for k, (a, b) in ph.items())
                tail = med(rel(r[:, 3:n, 5], r[:, 2:n - 1, 7]))
                wait = med(rel(r[:, 3:n - 1, 0], r[:, 3:n - 1, 5]))
                if (r[:, c, 8] != 0).all():  # v63: the consumers' mbarrier wait, marked
                    parts += f" (top->wait {med(rel(r[:, c, 8], r[:, c, 0])):5.0f}, wait->Vt {med(rel(r[:, c, 1], r[:, c, 8])):5.0f})"
                if "--lean" in sys.argv:   # only the top (0) and the arrival (5) are marked
                    parts = f"top to arrival {med(rel(r[:, 3:n, 5], r[:, 2:n - 1, 0])):5.0f}"
                    print(f"  warp {w:2d} consumer arrival {arrive:+6.0f}; {parts}, barrier {wait:5.0f}")
                    continue
                print(f"  warp {w:2d} consumer arrival {arrive:+6.0f}; {parts}, to arrival {tail:5.0f}, barrier {wait:5.0f}")
            else:
                ph = {"wait": (6, 0), "round 1": (1, 6), "vote": (2, 1), "round 2": (3, 2), "to arrival": (5, 3)}
                parts = ", ".join(f"{k} {med(rel(r[:, 3:n - 1, a], r[:, 3:n - 1, b])):5.0f}" for k, (a, b) in ph.items())
                extra = ""
                if w == 15:
                    extra = f", TMA issue {med(rel(r[:, 3:n - 2, 7], r[:, 3:n - 2, 6])):5.0f}"
                print(f"  warp {w:2d} prep     arrival {arrive:+6.0f}; {parts}{extra}")


for arg in [a for a in sys.argv[1:] if not a.startswith("--")]:
    main(Path(arg))
