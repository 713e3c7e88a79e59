"""Write .gpu/v66_vtprep.py from .gpu/v64_avt.py (make_v64.py; session 27). In v64 the consumers open each chunk by
splitting Vt'' = beta_s v_s into fp16 pieces by row (~120 instructions a thread, ~1,000 cycles under the marks),
while prep warpgroup 1's round two (K^T Vt's k split) ends ~2,300 cycles before theirs. v66 moves that split to
warpgroup 1, after its k split and unless the chunk is safe: warp g takes the v tile's box g (state rows
32 g .. 32 g + 31, a row a lane, all 32 steps), and writes the pieces in place of the box, in the consumers'
register order (each consumer thread then loads its 16 registers of pieces with four 16-byte loads), with 1 / scale
by row beside. The same arithmetic as v64's, so bitwise v64."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v64_avt.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


def fsub(anchor, old, new):
    global src
    k = src.index(anchor)
    assert src.count(old, k, k + 30000) == 1, (old[:200], src.count(old, k, k + 30000))
    i = src.index(old, k)
    src = src[:i] + new + src[i + len(old):]


sub("# v64_avt: v63b_tma (below)", """# v66_vtprep: v64_avt (below) with the consumers' split of Vt'' done by prep warpgroup 1 in place of the v tile.
# v64_avt: v63b_tma (below)""")
sub("""  static constexpr int GS = RG + 2 * C;             // G_t, 2 chunks""",
    """  static constexpr int RV = RG + 2 * C;             // 1 / (Vt'''s scale) by state row j, 2 chunks of DP
  static constexpr int GS = RV + 2 * DP;            // G_t, 2 chunks""")
# the prep's split of Vt'' into the consumers' register order, in place of the v tile's box g
sub("""// Prep warps (pw 0..7): the gate scan (each warp);""", """// Vt''^T = (beta_s v_s)^T's rows 32 g .. 32 g + 31 (one warp, a row j a lane, all 32 steps: the v tile's box g)
// into fp16 pieces under a power-of-two scale a row (1 / scale into rv[j]), written over the box in the order the
// consumers' registers take them: consumer warp w = j >> 4 (box g holds warps 2 g and 2 g + 1, 512 words each), k
// step m (256 words), hi / lo (128), consumer lane 4 (j & 7) + (s & 3) (4 words), register (s & 8 ? 2 : 0) + ((j >> 3)
// & 1), each word the steps s, s + 4 (v64's wsh_vt_pieces, which this replaces on the consumers).
__device__ __forceinline__ void wsh_vt_prep(float* vt, const float* bs, float* rv, int g, int lane) {
  const int j = 32 * g + lane;
  float* box = vt + 1024 * g;
  float x[32];
  float m = 0.f;
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    x[s] = box[s * 32 + ((((j >> 2) & 7) ^ (s & 7)) << 2) + (j & 3)] * bs[s];  // wsh_toff(s, j) within the box
    m = fmaxf(m, fabsf(x[s]));
  }
  float sc, inv;
  pow2_scale(m, sc, inv);
  rv[j] = inv;
  __syncwarp();  // every lane's column read before any piece lands on the box
  uint32_t* out = reinterpret_cast<uint32_t*>(box) + 512 * ((j >> 4) & 1) + 16 * (j & 7) + ((j >> 3) & 1);
#pragma unroll
  for (int m16 = 0; m16 < 2; ++m16)
#pragma unroll
    for (int hs = 0; hs < 2; ++hs)
#pragma unroll
      for (int tg = 0; tg < 4; ++tg) {
        const int s = 16 * m16 + 8 * hs + tg;
        uint32_t hi, lo;
        split_h2(x[s] * sc, x[s + 4] * sc, hi, lo);
        const int o = 256 * m16 + 4 * tg + 2 * hs;
        out[o] = hi;
        out[o + 128] = lo;
      }
}

// Prep warps (pw 0..7): the gate scan (each warp);""")
fsub("__device__ __forceinline__ void wsh_prepare(", """                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
""", """                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
    if (!safe) wsh_vt_prep(sm + W::VB + (c % W::NBUF) * W::TILE, gb + W::BR, sm + W::RV + nb * W::DP, pw - 4, lane);
""")
fsub("gd_wsh_kernel(const __grid_constant__", """      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, j0, tig);
""", """      {  // Vt'''s pieces as prep warpgroup 1 left them over the v tile
        const uint4* vp = reinterpret_cast<const uint4*>(vsm + 512 * warp) + lane;
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const uint4 ph = vp[64 * m], pl = vp[64 * m + 32];
          wh[m][0] = ph.x, wh[m][1] = ph.y, wh[m][2] = ph.z, wh[m][3] = ph.w;
          wl[m][0] = pl.x, wl[m][1] = pl.y, wl[m][2] = pl.z, wl[m][3] = pl.w;
        }
        iv0 = sm[W::RV + nb * DP + j0];
        iv1 = sm[W::RV + nb * DP + j0 + 8];
      }
""")
src = src.replace('name="sgd_v64_avt"', 'name="sgd_v66_vtprep"').replace("sgd_v64_forward", "sgd_v66_forward")
(ROOT / ".gpu/v66_vtprep.py").write_text(src)
print("wrote .gpu/v66_vtprep.py")
