"""Does probe74 time the kernel it probes? Its marks are global stores, and the prep's round one ends in a proxy fence
(`fence.proxy.async.shared::cta`) right after mark 1: if that fence waits for the warp's outstanding global stores,
the ~1,000-1,500 cycles probe74 reads between mark 1 and the vote's release are the probe's own. Builds of v69_sacc
(or a file with its WSH_MARK hooks) at large, each timed by CUDA events over one process's calls:
  plain  the file as it is (no marks);
  bare   the consumers' marks 0 and 5 only (loop top, arrival), no prep marks: the chunk with no store before a fence;
  lean   probe74 --lean (the consumers' 0 and 5, every prep mark);
  after  lean with the prep's mark 1 after the round-one fence (its "vote" is then the barrier alone);
  reg    lean with the prep's marks held in registers and stored after the CTA barrier (no mark store right before
         a fence; the next chunk's round-one fence comes ~2,500 cycles after them).
Every mark also stores %globaltimer beside clock64, so cycles per ns (the SM clock under load) come from the same run.
Call 14 (session 36): they are; the prep's marks add ~1,700 cycles a chunk (call14/probe76.log).
Session 47: every mode but plain also stores each CTA's entry time and SM (tid 0, before setup) and consumer
warp 0's exit, read by `cta_lines` (launch and chunk 0 before chunk 1's top, the last chunk after its mark, the
slowest CTAs by SM and by rate or stalls); PROBE_DUMP=DIR saves those marks.
    python probe76.py FILE [--dry | --build] [--flush] [--modes=plain,bare,lean,after,reg]"""
import re
import sys
import types
from pathlib import Path

SHAPE = (8, 4096, 16, 128)
NCH = 128
NB = 128
NM = 16
MODES = ["plain", "bare", "lean", "after", "reg"]

PREP_LOOP_MARKS = ["WSH_MARK(0, ch + 1);", "WSH_MARK(6, ch + 1);", "WSH_MARK(7, ch + 1);", "WSH_MARK(5, ch + 1);"]
EXTRA_MARKS = ["WSH_MARK(8, ch + 1);", "WSH_MARK(9, ch + 1);"]  # v76: after the gate store, after the TMA wait
PREPARE_MARKS = ["WSH_MARK(1, c);", "WSH_MARK(2, c);", "WSH_MARK(3, c);"]


def make_source(path: Path, mode: str) -> str:
    src = path.read_text()
    ver = path.stem.split("_")[0]
    if mode == "plain":
        return src

    def sub(old, new, count=1):
        nonlocal src
        assert src.count(old) == count, (old, src.count(old))
        src = src.replace(old, new)

    # consumers: only the loop top (0) and the arrival (5)
    top = src.index("WSH_MARK(0, ch);")
    head, tail = src[:top], src[top:]
    for m in (1, 2, 3, 4, 6, 7):
        tail = tail.replace(f"WSH_MARK({m}, ch);", ";")
    src = head + tail
    store = (f"if ((threadIdx.x & 31) == 0 && (c) < {NCH} && blockIdx.x < {NB}) {{ "
             f"const int pi_ = ((blockIdx.x * 16 + (threadIdx.x >> 5)) * {NCH} + (c)) * {NM} + (m); "
             f"g_pp[pi_] = (unsigned)clock64(); g_gt[pi_] = globaltimer_ns(); }}")
    sub("#define WSH_MARK(m, c)  // a probe's hook\n",
        f"__device__ unsigned g_pp[{NB} * 16 * {NCH} * {NM}];\n"
        f"__device__ unsigned long long g_gt[{NB} * 16 * {NCH} * {NM}];\n"
        "__device__ __forceinline__ unsigned long long globaltimer_ns() { unsigned long long t; "
        "asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t)); return t; }\n"
        f"#define WSH_MARK(m, c) {store}\n"
        "#define WSH_PMARK(m, c) pmk_[m] = (unsigned)clock64();\n"
        f"__device__ unsigned long long g_cta[{NB} * 3];\n")
    # each CTA's entry (%globaltimer before its first instruction of setup) and its SM (session 47: which CTAs
    # are slowest, by SM, and what the launch and chunk 0 cost before chunk 1's top)
    sub("  if (sm_addr(sm) & 1023) __trap();  // wsh_toff's swizzle assumes 1024-byte aligned tiles\n",
        f"  if (tid == 0 && blockIdx.x < {NB}) {{ unsigned smid_; asm volatile(\"mov.u32 %0, %smid;\" : \"=r\"(smid_)); "
        "g_cta[3 * blockIdx.x] = globaltimer_ns(); g_cta[3 * blockIdx.x + 1] = smid_; }\n"
        "  if (sm_addr(sm) & 1023) __trap();  // wsh_toff's swizzle assumes 1024-byte aligned tiles\n")
    # and when consumer warp 0 leaves the chunk loop: the last chunk's end
    k0 = src.index("gd_wsh_kernel(const __grid_constant__")
    done = "    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n"
    at = src.index(done, k0) + len(done) - 2
    src = (src[:at] + f"  if (tid == 0 && blockIdx.x < {NB}) g_cta[3 * blockIdx.x + 2] = globaltimer_ns();\n"
           + src[at:])
    # the prep's loop lies between these two comments; the consumers' own marks 0 and 5 stay
    k0 = src.index("gd_wsh_kernel(const __grid_constant__")
    a, z = src.index("// ---- producers", k0), src.index("// ---- consumers", k0)
    prep_loop = src[a:z]
    loop_marks = [mk for mk in PREP_LOOP_MARKS + EXTRA_MARKS if mk in prep_loop]  # v77: no mark 7 (no TMA issue there)
    if mode == "bare":
        for mk in loop_marks:
            prep_loop = prep_loop.replace(mk, ";")
        src = src[:a] + prep_loop + src[z:]
        for mk in PREPARE_MARKS:
            sub(mk, ";")
    elif mode == "after":
        sub("  WSH_MARK(1, c);\n  wg_proxy_fence();  // the pieces visible to A's wgmma after the vote's barrier\n",
            "  wg_proxy_fence();  // the pieces visible to A's wgmma after the vote's barrier\n  WSH_MARK(1, c);\n")
    elif mode == "reg":
        for mk in loop_marks:
            assert prep_loop.count(mk) == 1, mk
            prep_loop = prep_loop.replace(mk, mk.replace("WSH_MARK", "WSH_PMARK"))
        decl = "    float gn = 0.f, bn = 0.f;  // the next chunk to store's gate and beta (lane t)\n"
        assert prep_loop.count(decl) == 1
        prep_loop = prep_loop.replace(decl, decl + "    unsigned pmk_[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};\n")
        prep_loop, ncalls = re.subn(r"(wsh_prepare\(sm, [^;]*?)\);", r"\1, pmk_);", prep_loop)
        assert ncalls == 2, ncalls
        flush = (f"      if (lane == 0 && ch + 1 < {NCH} && blockIdx.x < {NB}) {{\n"
                 f"        const int pb_ = ((blockIdx.x * 16 + warp) * {NCH} + ch + 1) * {NM};\n"
                 "        g_pp[pb_ + 0] = pmk_[0]; g_pp[pb_ + 6] = pmk_[6]; g_pp[pb_ + 7] = pmk_[7]; g_pp[pb_ + 1] = pmk_[1];\n"
                 "        g_pp[pb_ + 2] = pmk_[2]; g_pp[pb_ + 3] = pmk_[3]; g_pp[pb_ + 5] = pmk_[5];\n"
                 + ("        g_pp[pb_ + 8] = pmk_[8]; g_pp[pb_ + 9] = pmk_[9];\n" if EXTRA_MARKS[1] in loop_marks else "")
                 + "      }\n")
        bar = "      cta_sync();  // chunk c consumed; chunk c+1 prepared\n"
        assert prep_loop.count(bar) == 1
        prep_loop = prep_loop.replace(bar, bar + flush)
        src = src[:a] + prep_loop + src[z:]
        for mk in PREPARE_MARKS:
            sub(mk, mk.replace("WSH_MARK", "WSH_PMARK"))
        src, nsig = re.subn(r"(void wsh_prepare\([^)]*)\) \{", r"\1, unsigned (&pmk_)[10]) {", src)
        assert nsig == 1, nsig
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PP_SRC],")
    words = NB * 16 * NCH * NM
    sub(f'CPP_SRC = "void sgd_{ver}_forward(',
        'PP_SRC = r"""\n'
        f'torch::Tensor pp_read() {{ auto t = torch::zeros({{{words}}}, torch::kInt32);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int32_t>(), g_pp, sizeof(unsigned) * {words}); return t; }}\n'
        f'torch::Tensor gt_read() {{ auto t = torch::zeros({{{words}}}, torch::kInt64);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_gt, sizeof(long long) * {words}); return t; }}\n'
        f'torch::Tensor cta_read() {{ auto t = torch::zeros({{{NB * 3}}}, torch::kInt64);\n'
        f'  cudaMemcpyFromSymbol(t.data_ptr<int64_t>(), g_cta, sizeof(long long) * {NB * 3}); return t; }}\n"""\n'
        f'CPP_SRC = "torch::Tensor pp_read(); torch::Tensor gt_read(); torch::Tensor cta_read(); void sgd_{ver}_forward(')
    sub(f'functions=["sgd_{ver}_forward"],', f'functions=["sgd_{ver}_forward", "pp_read", "gt_read", "cta_read"],')
    return src


def built(path: Path, mode: str):
    src = make_source(path, mode)
    name = f"sgd_{path.stem.replace('_', '')}_{mode}76"
    src = src.replace(f'name="sgd_{path.stem}",', f'name="{name}",')
    out = Path(__file__).with_name(f"probe76_{path.stem}_{mode}.py")
    out.write_text(src)
    return out, src


def cta_lines(ext, p, gt, n, rel, events_us, tag):
    """Where the kernel's time goes outside the chunk (session 47): each CTA's entry, its SM, the end of its
    last chunk (%globaltimer), and whether the slowest CTAs are slow by rate (every chunk longer) or by stalls
    (a few long chunks). Of the last of the timed calls. PROBE_DUMP=DIR also saves the per-CTA marks there."""
    import os
    import torch
    cta = ext.cta_read().view(-1, 3)[: p.shape[0]]
    entry, smid, exit_ = cta[:, 0], cta[:, 1], cta[:, 2]
    us = lambda x: x.double() / 1000.0
    first = entry.min()
    top1, last_arr = gt[:, 0, 1, 0], gt[:, 0, n - 1, 5]
    span = us(last_arr - top1)
    fill, drain = us(top1 - entry), us(exit_ - last_arr)
    q = lambda x: f"{x.median().item():.2f} ({x.min().item():.2f}-{x.max().item():.2f})"
    print(f"  CTAs: entries spread over {us(entry.max() - first).item():.2f} us; entry to chunk 1's top {q(fill)}; "
          f"chunks 1..{n - 2} {q(span)}; last chunk to exit {q(drain)} us; first entry to last exit "
          f"{us(exit_.max() - first).item():.1f} us (this call; events median {events_us:.1f} over the calls)")
    # rate or stalls: a CTA's chunks (consumer warp 0, arrival to arrival) against the median CTA's
    steps = rel(p[:, 0, 3:n, 5], p[:, 0, 2:n - 1, 5])
    cta_med = steps.median(dim=1).values
    typical = steps.median().item()
    excess = (steps - typical).clamp(min=0)
    stalled = steps > 1.15 * typical
    order = span.argsort(descending=True)
    print(f"  SMs: {smid.unique().numel()} distinct for {smid.numel()} CTAs; span by SM parity: even "
          f"{span[smid % 2 == 0].median().item():.1f}, odd {span[smid % 2 == 1].median().item():.1f} us")
    for rank, i in enumerate(order[:6].tolist() + [order[len(order) // 2].item()]):
        partner = (smid == (smid[i] ^ 1)).nonzero().flatten().tolist()
        pspan = f"{span[partner[0]].item():.1f}" if partner else "idle"
        print(f"    {'median' if rank == 6 else 'slow ' + str(rank + 1)}: CTA {i:3d} on SM {smid[i].item():3d} "
              f"(SM ^ 1: CTA {partner[0] if partner else '-'}, span {pspan}); span {span[i].item():.1f} us, "
              f"entry +{us(entry[i] - first).item():.2f}, median chunk {cta_med[i].item():.0f} cycles, "
              f"{int(stalled[i].sum())} chunks over 1.15x, their excess {excess[i][stalled[i]].sum().item():.0f} cycles")
    out = os.environ.get("PROBE_DUMP")
    if out:
        os.makedirs(out, exist_ok=True)
        torch.save({"smid": smid, "entry_ns": entry, "exit_ns": exit_, "top_ns": gt[:, 0, :n, 0],
                    "arrival_ns": gt[:, 0, :n, 5], "top_cycles": p[:, 0, :n, 0].int(),
                    "arrival_cycles": p[:, 0, :n, 5].int()}, os.path.join(out, f"cta_{tag}.pt"))


def run(path: Path, mode: str):
    import torch
    out, src = built(path, mode)
    module = types.ModuleType(out.stem)
    exec(compile(src, str(out), "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    import fcntl  # built in parallel, timed one at a time
    lock = open("/tmp/probe76.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    B, T, H, D = SHAPE
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
    gate = torch.sigmoid(torch.randn((B, T, H), device="cuda", generator=g) + 2.0)
    args = [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
    for _ in range(5):
        model(*args)
    torch.cuda.synchronize()
    times = []
    # --flush: L2 flushed before each timed call, as the harness's events timing does (session 42: v79b read 17-23
    # us under v79a in the harness and within 0.5% of it here, where gate and beta may stay in L2 between calls)
    scrub = torch.empty(64 << 20, device="cuda") if "--flush" in sys.argv else None
    for _ in range(30):
        if scrub is not None:
            scrub.zero_()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        model(*args)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1000.0)
    times.sort()
    line = f"{path.stem} {mode}{' (L2 flushed)' if scrub is not None else ''}: events median {times[len(times) // 2]:.1f} us (min {times[0]:.1f}, max {times[-1]:.1f}) over 30 calls"
    if mode == "plain":
        print(line)
        return
    n = min(NCH, (T + 31) // 32)
    p = ext.pp_read().view(NB, 16, NCH, NM)[: min(NB, B * H)].long()
    gt = ext.gt_read().view(NB, 16, NCH, NM)[: min(NB, B * H)]
    rel = lambda a, b: ((a - b + (1 << 31)) % (1 << 32) - (1 << 31)).double()
    med = lambda x: x.median().item()
    c = slice(3, n - 1)
    arr0 = p[:, 0, :, 5]
    step = med(rel(arr0[:, 3:n], arr0[:, 2:n - 1]))
    # SM clock: consumer warp 0's loop top, chunk 1 to chunk n - 1, cycles over ns
    cyc = rel(p[:, 0, n - 1, 0], p[:, 0, 1, 0])
    ns = (gt[:, 0, n - 1, 0] - gt[:, 0, 1, 0]).double()
    mhz = med(cyc / ns * 1000.0)
    print(f"{line}; chunk {step:.0f} cycles (median over {p.shape[0]} CTAs x chunks 2..{n - 2}, consumer warp 0's "
          f"arrival to arrival); SM clock {mhz:.0f} MHz (clock64 over %globaltimer, same marks); "
          f"{step * n / mhz:.1f} us of chunks at that clock")
    # the chunk's spread (session 42: v79a's median chunk fell 6% and its time 1-2%): consumer warp 0's arrival to
    # arrival over every CTA and chunk, and each CTA's span (%globaltimer, chunk 1's loop top to its last arrival)
    steps = rel(arr0[:, 3:n], arr0[:, 2:n - 1]).flatten().sort().values
    pct = lambda x, f: x[min(len(x) - 1, int(f * len(x)))].item()
    span = ((gt[:, 0, n - 1, 5] - gt[:, 0, 1, 0]).double() / 1000.0).sort().values
    print(f"  chunks: mean {steps.mean().item():.0f}, p10 {pct(steps, .1):.0f}, p50 {pct(steps, .5):.0f}, "
          f"p90 {pct(steps, .9):.0f}, p99 {pct(steps, .99):.0f}, max {steps[-1].item():.0f} cycles; CTA spans "
          f"min {span[0].item():.1f}, median {pct(span, .5):.1f}, max {span[-1].item():.1f} us; slowest CTAs "
          f"{(gt[:, 0, n - 1, 5] - gt[:, 0, 1, 0]).argsort(descending=True)[:6].tolist()}")
    try:
        cta_lines(ext, p, gt, n, rel, times[len(times) // 2], f"{path.stem}_{mode}")
    except Exception as exc:  # the new lines must not cost the old ones
        print(f"  CTAs: not read ({type(exc).__name__}: {exc})")
    for w in range(16):
        r = p[:, w]
        arrive = med(rel(r[:, 3:n, 5], arr0[:, 3:n]))
        if w < 8:
            wait = med(rel(r[:, 3:n - 1, 0], r[:, 3:n - 1, 5]))
            print(f"  warp {w:2d} consumer arrival {arrive:+6.0f}; top to arrival "
                  f"{med(rel(r[:, 3:n, 5], r[:, 2:n - 1, 0])):5.0f}, barrier {wait:5.0f}")
        elif mode != "bare":
            ph = {"wait": (6, 0), "round 1": (1, 6), "vote": (2, 1), "round 2": (3, 2), "to arrival": (5, 3)}
            parts = ", ".join(f"{k} {med(rel(r[:, c, a], r[:, c, b])):5.0f}" for k, (a, b) in ph.items())
            extra = (f", TMA issue {med(rel(r[:, 3:n - 2, 7], r[:, 3:n - 2, 6])):5.0f}"
                     if (r[:, 3:n - 2, 7] != 0).all() else "")  # the warps that issue boxes (v77: prep warps 1-3)
            if (r[:, c, 9] != 0).all():  # v76's marks: wait = gate store (0 -> 8), TMA wait (8 -> 9), producers' barrier (9 -> 6)
                extra += (f" [wait: gate store {med(rel(r[:, c, 8], r[:, c, 0])):5.0f}, TMA {med(rel(r[:, c, 9], r[:, c, 8])):5.0f}, "
                          f"barrier {med(rel(r[:, c, 6], r[:, c, 9])):5.0f}]")
            print(f"  warp {w:2d} prep     arrival {arrive:+6.0f}; {parts}{extra}")


if __name__ == "__main__":
    modes = MODES
    for a in sys.argv[1:]:
        if a.startswith("--modes="):
            modes = a.split("=", 1)[1].split(",")
    for arg in [a for a in sys.argv[1:] if not a.startswith("--")]:
        for mode in modes:
            if "--dry" in sys.argv:
                print("wrote", built(Path(arg), mode)[0])
            elif "--build" in sys.argv:  # build only (a call's builds first, its timings after, on a quiet host)
                out, src = built(Path(arg), mode)
                exec(compile(src, str(out), "exec"), types.ModuleType(out.stem).__dict__)  # load_inline compiles
                print("built", arg, mode)
            else:
                run(Path(arg), mode)
