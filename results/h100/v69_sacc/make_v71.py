"""Write .gpu/v71_vtprep.py from .gpu/v69_sacc.py (make_v69.py; session 29). REGS="C P" sets the setmaxnreg split.

v69 on an H100 (results: session 29, call 1): the consumers bound the chunk (7,411 cycles; prep warpgroup 0 arrives
~930 cycles early, warpgroup 1 ~2,420), and their chunk opens with the Vt'' split (~900 cycles). v71 moves that
split to prep warpgroup 1, after its k split: warp p computes, exactly as consumer warps 2p and 2p + 1 did
(wsh_vt_pieces, the same lanes), their 16 piece registers and two row scales, and stores them lane-major (four
16-byte stores a consumer warp, conflict-free) into a buffer of their own; a consumer thread reloads them with four
16-byte loads. v66 (from v64) tried this and lost 108 us: it wrote the pieces over the v tile with 8-way conflicted
stores, and its 88-register producers spilled. Here the buffer is separate, and v69's consumers hold 64 fewer
accumulator registers, so the split can give the producers more (REGS). One buffer: a consumer arrives at named
barrier 4 once it holds chunk c's pieces (the safe path, which reads them for its v, after its loop), and the prep
waits there before writing chunk c+1's. The consumers no longer read the raw v tile, so v needs two TMA buffers,
not three (the 16 KB that pays for the pieces' buffer): v goes beside q and k. Bitwise v69 except on safe chunks,
whose v is now the pieces' 22 significant bits (q and k there already were)."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v69_sacc.py").read_text()
REG_C, REG_P = (int(x) for x in os.environ.get("REGS", "168 88").split())
NAME = os.environ.get("NAME", "v71_vtprep")


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v69_sacc: v68c_both (below)", f"# {NAME}: v69_sacc (below) with the Vt'' split on prep warpgroup 1 (stored for the consumers in "
    f"their register order), v beside q and k\n# in two buffers, registers {REG_C} / {REG_P}.\n# v69_sacc: v68c_both (below)")
# ---- shared memory: v in the q / k buffers; the pieces' buffer
sub("static constexpr int NCW = 8, NBUF = 3, NBQK = 2, REG_C = 168, REG_P = 88, QG = 4;",
    f"static constexpr int NCW = 8, NBUF = 3, NBQK = 2, REG_C = {REG_C}, REG_P = {REG_P}, QG = 4;")
sub("""  static constexpr int QT = 0, KT = TILE, QKBUF = 2 * TILE;  // raw q, k: NBQK buffers
  static constexpr int VB = NBQK * QKBUF;           // raw v: NBUF tiles
  static constexpr int GB = VB + NBUF * TILE;       // gate[C], beta[C]: NBUF buffers""",
    """  static constexpr int QT = 0, KT = TILE, VT = 2 * TILE, QKBUF = 3 * TILE;  // raw q, k, v: NBQK buffers
  static constexpr int GB = NBQK * QKBUF;           // gate[C], beta[C]: NBUF buffers""")
sub("""  static constexpr int MB = XA + 1024;              // NBUF mbarriers (8 bytes each), a chunk's TMA each""",
    """  static constexpr int VP = XA + 1024;              // Vt'' pieces, [consumer warp][wh 0, wh 1, wl 0, wl 1][lane] uint4
  static constexpr int VIV = VP + NCW * 32 * 16;    // their 1 / scale, [consumer warp][lane] (rows j0, j0 + 8)
  static constexpr int MB = VIV + NCW * 32 * 2;     // NBUF mbarriers (8 bytes each), a chunk's TMA each""")
sub("""  float* vd = sm + W::VB + (ca % W::NBUF) * W::TILE;""", """  float* vd = sm + (ca % W::NBQK) * W::QKBUF + W::VT;""")
sub("// Chunk ca's q, k (buffer ca % NBQK) and v (buffer ca % NBUF)", "// Chunk ca's q, k and v (buffer ca % NBQK)")
# ---- the prep: warpgroup 1 splits Vt'' for two consumer warps each, after its k split
sub("""    wsh_split_k(kt, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
""", """    wsh_split_k(kt, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
    // Vt'' pieces of consumer warps 2 (pw - 4) and + 1, as they would split them, once they hold chunk c - 1's
    if (c > 0) asm volatile("bar.sync 4, %0;" ::"n"(32 * W::NCW + 128) : "memory");
    const float* vt = sm + (c % W::NBQK) * W::QKBUF + W::VT;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int w = 2 * (pw - 4) + u, j0 = 16 * w + gid;
      const int vo[4] = {wsh_toff(tig, j0), wsh_toff(tig, j0 + 8), wsh_toff(tig + 4, j0), wsh_toff(tig + 4, j0 + 8)};
      uint32_t wh[2][4], wl[2][4];
      float iv0, iv1;
      wsh_vt_pieces(wh, wl, iv0, iv1, vt, bsm, vo, tig);
      uint4* vp = reinterpret_cast<uint4*>(sm + W::VP) + 128 * w + lane;
      vp[0] = make_uint4(wh[0][0], wh[0][1], wh[0][2], wh[0][3]);
      vp[32] = make_uint4(wh[1][0], wh[1][1], wh[1][2], wh[1][3]);
      vp[64] = make_uint4(wl[0][0], wl[0][1], wl[0][2], wl[0][3]);
      vp[96] = make_uint4(wl[1][0], wl[1][1], wl[1][2], wl[1][3]);
      reinterpret_cast<float2*>(sm + W::VIV)[32 * w + lane] = make_float2(iv0, iv1);
    }
""")
# wsh_vt_pieces is defined after wsh_prepare: declare it first
sub("""__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {""",
    """__device__ __forceinline__ void wsh_vt_pieces(uint32_t (&wh)[2][4], uint32_t (&wl)[2][4], float& iv0, float& iv1,
                                              const float* vt, const float* bs, const int (&vo)[4], int tig);
__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {""")
# ---- the consumers: reload the pieces, arrive at barrier 4
sub("""  int le0 = 0, le1 = 0;
  const int vo[4] = {wsh_toff(tig, j0), wsh_toff(tig, j0 + 8), wsh_toff(tig + 4, j0), wsh_toff(tig + 4, j0 + 8)};
""", """  int le0 = 0, le1 = 0;
""")
sub("""    const float* vsm = sm + W::VB + (ch % W::NBUF) * W::TILE;
""", "")
sub("""      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, vo, tig);
""", """      {  // split by the prep (its warpgroup 1), reloaded; then the prep may write chunk c+1's
        const uint4* vp = reinterpret_cast<const uint4*>(sm + W::VP) + 128 * warp + lane;
        const uint4 h0 = vp[0], h1 = vp[32], l0 = vp[64], l1 = vp[96];
        const float2 iv = reinterpret_cast<const float2*>(sm + W::VIV)[32 * warp + lane];
        wh[0][0] = h0.x; wh[0][1] = h0.y; wh[0][2] = h0.z; wh[0][3] = h0.w;
        wh[1][0] = h1.x; wh[1][1] = h1.y; wh[1][2] = h1.z; wh[1][3] = h1.w;
        wl[0][0] = l0.x; wl[0][1] = l0.y; wl[0][2] = l0.z; wl[0][3] = l0.w;
        wl[1][0] = l1.x; wl[1][1] = l1.y; wl[1][2] = l1.z; wl[1][3] = l1.w;
        iv0 = iv.x;
        iv1 = iv.y;
        if (ch + 1 < nchunks) asm volatile("bar.arrive 4, %0;" ::"n"(32 * W::NCW + 128) : "memory");
      }
""")
# the safe path: v from the pieces (rows j0, j0 + 8 of step t: lane 4 gid + (t & 3)'s register 2 (ks & 1) (+ 1) of
# piece pair ks >> 1, the high half for t & 4)
sub("""      const float* gsm = cur + W::GR;
      const float* bsm = cur + W::BR;
      for (int t = 0; t < n; ++t) {
        const float g = gsm[t];
        const float bt = bsm[t];
        const float cv0 = bt * vsm[wsh_toff(t, j0)];
        const float cv1 = bt * vsm[wsh_toff(t, j0 + 8)];
""", """      const float* gsm = cur + W::GR;
      const uint32_t* vpw = reinterpret_cast<const uint32_t*>(sm + W::VP) + 512 * warp;
      const float2 viv = reinterpret_cast<const float2*>(sm + W::VIV)[32 * warp + lane];
      for (int t = 0; t < n; ++t) {
        const float g = gsm[t];
        const int ks = t >> 3, src = 4 * gid + (t & 3), reg = 2 * (ks & 1), sh = (t & 4) ? 16 : 0;
        const uint32_t* hp = vpw + 4 * (32 * (ks >> 1) + src) + reg;
        const uint32_t* lp = vpw + 4 * (32 * (2 + (ks >> 1)) + src) + reg;
        const float cv0 = (__half2float(__ushort_as_half((unsigned short)(hp[0] >> sh))) +
                           __half2float(__ushort_as_half((unsigned short)(lp[0] >> sh)))) * viv.x;
        const float cv1 = (__half2float(__ushort_as_half((unsigned short)(hp[1] >> sh))) +
                           __half2float(__ushort_as_half((unsigned short)(lp[1] >> sh)))) * viv.y;
""")
sub("""        if (tig == 0) {
          yb[t * rs + j0] = p0;
          yb[t * rs + j0 + 8] = p1;
        }
      }
    }
    WSH_MARK(5, ch + 1);""", """        if (tig == 0) {
          yb[t * rs + j0] = p0;
          yb[t * rs + j0 + 8] = p1;
        }
      }
      if (ch + 1 < nchunks) asm volatile("bar.arrive 4, %0;" ::"n"(32 * W::NCW + 128) : "memory");
    }
    WSH_MARK(5, ch + 1);""")
tag = NAME.split("_")[0]
src = src.replace('name="sgd_v69_sacc"', f'name="sgd_{NAME}"').replace("sgd_v69_forward", f"sgd_{tag}_forward")
(ROOT / f".gpu/{NAME}.py").write_text(src)
print("wrote", NAME, REG_C, REG_P)
