"""Write .gpu/v75a_tmaqk.py, v75b_tmaqk.py and v75c_nofence.py (session 35).

probe74 (call 8) on v69 and v74 at large: the prep warps wait ~1,000-1,500 cycles at the vote for warp 15, whose lane 0
issues chunk c+2's 12 TMA boxes (with a proxy fence first) before its share of round one: that issue reads ~1,480
cycles, and under v74 the prep's chain (round one, vote, round two) is what sets the chunk (prep arrives 1,360-1,920
cycles after the consumers). Two ways to take the issue off that chain:

- tmaqk (v75a from v69, v75b from v74): only v's 4 boxes stay at the prep's loop top (v's buffer is free only after
  the CTA barrier: the consumers read v raw). q and k of chunk c+2 go into the raw buffer that prepare(c) has just
  read: q's box g after the vote (wg0's reads of raw q end at it), k's box g after prep warp 4 + g's round two (the
  only reader of raw k's box g after the vote), each by lane 0 of warp 4 + g of warpgroup 1, which arrives at the CTA
  barrier 560-1,590 cycles before warpgroup 0. The chunk's expect_tx moves to the loop top a chunk earlier (its
  mbarrier's previous phase was waited there). The q / k data then lead by ~1.5 chunks instead of ~1.
- nofence (v75c from v74): only the proxy fence before the 12 boxes goes. The buffers' earlier readers are generic
  loads ordered by the CTA barrier; a write-after-read across proxies needs no fence (CUTLASS's TMA pipelines issue
  after an mbarrier wait alone). Tells whether the ~1,480 cycles are the fence or the boxes.

None changes an operation on data: y is bitwise v69's. Before: python results/h100/v69_sacc/make_v74.py."""
from pathlib import Path

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())


def build(base: Path, name: str, kind: str):
    src = base.read_text()
    ver = base.stem.split("_")[0]

    def sub(old, new, count=1):
        nonlocal src
        assert src.count(old) == count, (name, old[:200], src.count(old))
        src = src.replace(old, new)

    head = src.splitlines()[0].split(":")[0].lstrip("# ")
    if kind == "nofence":
        sub("""  wg_proxy_fence();  // this thread's view: the buffers' earlier generic reads (ordered by the CTA barrier) first
  mbar_expect_tx(m, 3 * W::TILE * 4);""", """  mbar_expect_tx(m, 3 * W::TILE * 4);  // no proxy fence: the buffers' readers are generic loads ordered by the CTA barrier""")
        line = f"# {name}: {head} (below) with no proxy fence before a chunk's TMA boxes.\n"
    else:
        sub("""__device__ __forceinline__ void wsh_wait_chunk(float* sm, int c) {""",
            """// tmaqk: a chunk's expected bytes (once, before any of its boxes) and its boxes one at a time: part 0 q, 1 k, 2 v.
__device__ __forceinline__ void wsh_tma_expect(float* sm, int ca) {
  mbar_expect_tx(reinterpret_cast<uint64_t*>(sm + WshCfg::MB) + ca % WshCfg::NBUF, 3 * WshCfg::TILE * 4);
}
__device__ __forceinline__ void wsh_tma_part(float* sm, const CUtensorMap* map, int part, int cb, int ca, int b, int h) {
  using W = WshCfg;
  uint64_t* m = reinterpret_cast<uint64_t*>(sm + W::MB) + ca % W::NBUF;
  float* d = part == 2 ? sm + W::VB + (ca % W::NBUF) * W::TILE
                       : sm + (ca % W::NBQK) * W::QKBUF + (part == 0 ? W::QT : W::KT);
  tma_box(d + cb * 1024, map, 32 * cb, h, ca * W::C, b, m);
}
__device__ __forceinline__ void wsh_wait_chunk(float* sm, int c) {""")
        sub("__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {",
            "__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig,\n"
            "                                            const CUtensorMap* tq, const CUtensorMap* tk, int b, int h, int nchunks) {")
        sub("""  WSH_MARK(2, c);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;""", """  WSH_MARK(2, c);
  // chunk c + 2's q box pw - 4 into the raw buffer just read (every read of raw q ended before the vote)
  if (pw >= 4 && lane == 0 && c + 2 < nchunks) {
    wg_proxy_fence();
    wsh_tma_part(sm, tq, 0, pw - 4, c + 2, b, h);
  }
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;""")
        sub("""                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
  }""", """                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
    __syncwarp();  // this warp was raw k's box pw - 4's last reader: chunk c + 2's box there
    if (lane == 0 && c + 2 < nchunks) wsh_tma_part(sm, tk, 1, pw - 4, c + 2, b, h);
  }""")
        sub("""        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
      }""", """        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
        if (2 < nchunks) wsh_tma_expect(sm, 2);  // chunk 2's q and k come from prepare(0)
      }""")
        sub("    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);",
            "    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig, &tq, &tk, b, h, nchunks);")
        sub("""        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);""",
            """        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2's v into chunk c - 1's buffer (the consumers read it until the CTA barrier); chunk c + 3's
          // bytes expected on its mbarrier (its last phase, chunk c's, was waited a chunk ago)
          if (lane == 0) {
            if (ch + 3 < nchunks) wsh_tma_expect(sm, ch + 3);
            wg_proxy_fence();
#pragma unroll
            for (int cb = 0; cb < 4; ++cb) wsh_tma_part(sm, &tv, 2, cb, ch + 2, b, h);
          }
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig, &tq, &tk, b, h, nchunks);""")
        line = (f"# {name}: {head} (below) with chunk c + 2's q and k boxes issued by warpgroup 1's warps as prepare(c)\n"
                "# frees them (q after the vote, k box g after round two), v's alone at the prep's loop top.\n")
    src = line + src
    tag = name.split("_")[0]
    sub(f"sgd_{ver}_forward", f"sgd_{tag}_forward", count=src.count(f"sgd_{ver}_forward"))
    sub(f'name="sgd_{base.stem}",', f'name="sgd_{name}",')
    out = ROOT / f".gpu/{name}.py"
    out.write_text(src)
    print("wrote", out)


v69 = ROOT / ".gpu/v69_sacc.py"   # make_v74.py writes it (v69 left the catalogue in session 37)
v74 = ROOT / ".gpu/v74_async.py"
build(v69, "v75a_tmaqk", "tmaqk")
build(v74, "v75b_tmaqk", "tmaqk")
build(v74, "v75c_nofence", "nofence")
