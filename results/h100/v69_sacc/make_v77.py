"""Write .gpu/v77a_tmavote.py and .gpu/v77b_tmalast.py from .gpu/v76b_tma5d.py (session 37; make_v76.py writes v76b).

Calls 15-16 (an H200, results/h200/v76): v76b's three 5D TMA boxes cut warp 15's issue from 1,418 cycles (v76a's
twelve boxes) to 578, and its chunk (probe76 reg) to 6,729 cycles; large 487 µs against v69's 502. The chunk is
still the prep's: warp 15 issues the boxes before its round one (3,264 cycles against 2,337-2,690 for the others),
so warpgroup 0 waits 768-1,047 cycles at the vote, then builds A for ~2,550 and reaches the barrier ~780 cycles
after the consumers (5,370-5,700 top to arrival). Warpgroup 1's round two (~2,000) leaves it ~450-600 cycles of
slack before warpgroup 0 arrives.

- v77a_tmavote: chunk c+2's three boxes issued after the vote by warps 12, 13 and 14 (prep warps 4-6: q, k, v, one
  box each, ~190 cycles) instead of by warp 15 before its round one. Prep warp 4's lane 0 arms the mbarrier with
  the three boxes' bytes before the vote, whose barrier orders that ahead of the three issues. The proxy fence each
  issuing thread needs after the CTA barrier is the one every prep thread makes before the vote. The boxes land
  ~3,500 cycles before the next loop top waits for them (v76b: ~6,300).
- v77b_tmalast: the three boxes issued by warp 15 alone after the vote (~578 cycles on its round two, which is
  warpgroup 1's: ~2,000 against warpgroup 0's ~2,550).

No operation on data changes: y is bitwise v76b's (so v69's).
Predictions (written before the run): warp 15's round one 3,264 -> ~2,690, the vote's wait for warpgroup 0
~800-1,050 -> ~100-300, the chunk (reg) 6,729 -> ~6,000-6,150 with the consumers (~5,700 top to arrival) about
setting it; large 487 -> ~440-450 µs on an H200 for v77a; v77b ~10 µs behind v77a (warp 15 then arrives ~100-300
cycles after warpgroup 0)."""
from pathlib import Path

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())


def build(name: str, issuers: str, base: str = "v76b_tma5d"):
    src = (ROOT / ".gpu" / f"{base}.py").read_text()
    bver = base.split("_")[0]

    def sub(old, new, count=1):
        nonlocal src
        assert src.count(old) == count, (name, old[:200], src.count(old))
        src = src.replace(old, new)

    # the prep takes the chunk whose boxes it issues (or -1) and the tensor maps
    sub("""__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {
  using W = WshCfg;""", """__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig,
                                            int ca, const CUtensorMap* tq, const CUtensorMap* tk, const CUtensorMap* tv,
                                            int b, int h) {
  using W = WshCfg;""")
    arm = "ptid == 128" if issuers == "three" else "ptid == 224"
    sub("""  WSH_MARK(1, c);
  wg_proxy_fence();  // the pieces visible to A's wgmma after the vote's barrier
  const int safe = prep_vote<NP>(pred);
  WSH_MARK(2, c);
""", f"""  WSH_MARK(1, c);
  uint64_t* mca = reinterpret_cast<uint64_t*>(sm + W::MB) + (ca < 0 ? 0 : ca % W::NBUF);
  // chunk ca's mbarrier armed with its three boxes' bytes before the vote, whose barrier orders it ahead of the boxes
  if (ca >= 0 && {arm}) mbar_expect_tx(mca, 3 * W::TILE * 4);
  // the pieces visible to A's wgmma after the vote's barrier; also the proxy fence the boxes' issuers need after
  // the CTA barrier (the buffers' earlier generic reads first)
  wg_proxy_fence();
  const int safe = prep_vote<NP>(pred);
  WSH_MARK(2, c);
""")
    if issuers == "three":
        sub("""  WSH_MARK(2, c);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
""", """  WSH_MARK(2, c);
  if (ca >= 0 && pw >= 4 && pw < 7 && lane == 0) {  // chunk ca: q (prep warp 4), k (5), v (6), one box each
    const int t0 = ca * W::C;
    if (pw == 4) tma_tile(sm + (ca % W::NBQK) * W::QKBUF + W::QT, tq, h, t0, b, mca);
    else if (pw == 5) tma_tile(sm + (ca % W::NBQK) * W::QKBUF + W::KT, tk, h, t0, b, mca);
    else tma_tile(sm + W::VB + (ca % W::NBUF) * W::TILE, tv, h, t0, b, mca);
  }
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
""")
    else:
        sub("""  WSH_MARK(2, c);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
""", """  WSH_MARK(2, c);
  if (ca >= 0 && pw == 7 && lane == 0) {  // chunk ca's three boxes
    const int t0 = ca * W::C;
    tma_tile(sm + (ca % W::NBQK) * W::QKBUF + W::QT, tq, h, t0, b, mca);
    tma_tile(sm + (ca % W::NBQK) * W::QKBUF + W::KT, tk, h, t0, b, mca);
    tma_tile(sm + W::VB + (ca % W::NBUF) * W::TILE, tv, h, t0, b, mca);
  }
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
""")
    sub("""    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);""",
        """    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig, -1, &tq, &tk, &tv, b, h);""")
    sub("""        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);""",
        """        // chunk c + 2 (issued after the vote): q / k into chunk c's buffers (split during chunk c - 1), v into
        // chunk c - 1's
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig, ch + 2 < nchunks ? ch + 2 : -1,
                    &tq, &tk, &tv, b, h);""")
    what = ("issued after the vote by prep warps 4-6, one box each" if issuers == "three"
            else "issued after the vote by warp 15")
    line = f"# {name}: v76b_tma5d (below) with chunk c+2's three TMA boxes {what}, not before warp 15's round one"
    ver = name.split("_")[0]
    sub(f'CPP_SRC = "void sgd_{bver}_forward(', f'CPP_SRC = "void sgd_{ver}_forward(')
    sub(f'functions=["sgd_{bver}_forward"],', f'functions=["sgd_{ver}_forward"],')
    sub(f'name="sgd_{base}",', f'name="sgd_{name}",')
    src = src.replace(f"sgd_{bver}_forward", f"sgd_{ver}_forward")
    src = line + "\n" + src
    out = ROOT / ".gpu" / f"{name}.py"
    out.write_text(src)
    print("wrote", out)


build("v77a_tmavote", "three")
build("v77b_tmalast", "one")
