"""Write .gpu/v56_kuni.py from candidates/scalar_gated_delta/v54_famat.py (session 24). probe54: the consumers set
v54's chunk, and their state update takes ~440-560 cycles: per element a multiply by k's column scale times the
row's, a fused multiply-add and the gate multiply, and 16 loads of the column scales. v56 gives K^T Vt's k pieces
one scale for the whole chunk (every prep warp takes a share of k's largest |value|, then a prep barrier), so the
update is a fused multiply-add and a multiply an element with one factor a row."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v54_famat.py").read_text()


def sub(old, new):
    global src
    assert src.count(old) == 1, (old[:160], src.count(old))
    src = src.replace(old, new)


sub("""  static constexpr int TOTAL = SF + 4;
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert(QKBUF""", """  static constexpr int KMX = SF + 4;               // each prep warp's share of k's largest |value|
  static constexpr int TOTAL = KMX + 8;
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert(QKBUF""")
sub("""  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale) by state column i, 2 chunks""",
    """  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale for K^T Vt, one a chunk), 2 chunks of DP""")
# the k split by state column under a scale given for the chunk
sub("""// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps) into K hi / lo, each column under
// its own scale; 1 / scale into rk.
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float* rk, int g, int lane) {""",
    """// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps) into K hi / lo under the chunk's
// scale sc.
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float sc, int g, int lane) {""")
sub("""  float x[32];
  float m = 0.f;
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    x[s] = kr[s * DPS + i];
    m = fmaxf(m, fabsf(x[s]));
  }
  float sc, inv;
  pow2_scale(m, sc, inv);
#pragma unroll
  for (int b8 = 0; b8 < 4; ++b8) {""", """  float x[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) x[s] = kr[s * DPS + i];
#pragma unroll
  for (int b8 = 0; b8 < 4; ++b8) {""")
sub("""    *reinterpret_cast<uint4*>(kl + o) = make_uint4(l0, l1, l2, l3);
  }
  rk[i] = inv;
}""", """    *reinterpret_cast<uint4*>(kl + o) = make_uint4(l0, l1, l2, l3);
  }
}""")
sub("""  const float* qr = qkb + W::QB;
  const float* kr = qkb + W::KR;
#pragma unroll 1
  for (int blk = pw; blk < 12; blk += W::NPW) {""", """  const float* qr = qkb + W::QB;
  const float* kr = qkb + W::KR;
  // k's largest |value| over the chunk (a share a prep warp, then the prep barrier): K^T Vt's k pieces take one scale
  float km = 0.f;
  for (int idx = ptid; idx < C * W::DP / 4; idx += NP) {
    const float4 x = *reinterpret_cast<const float4*>(kr + (idx >> 5) * W::DPS + 4 * (idx & 31));
    km = fmaxf(km, fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(x.z), fabsf(x.w))));
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) km = fmaxf(km, __shfl_xor_sync(kFull, km, off));
  if (lane == 0) sm[W::KMX + pw] = km;
  prep_sync<NP>();
#pragma unroll
  for (int w = 0; w < W::NPW; ++w) km = fmaxf(km, sm[W::KMX + w]);
  float ksc, kinv;
  pow2_scale(km, ksc, kinv);
  if (ptid == 0) sm[W::RK + nb * W::DP] = kinv;
#pragma unroll 1
  for (int blk = pw; blk < 12; blk += W::NPW) {""")
sub("""                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), sm + W::RK + nb * W::DP, bt, lane);""",
    """                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, bt, lane);""")
sub("""      const float GC = gsc[C - 1];
      const float* rk = sm + W::RK + nb * DP;
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          const float2 r = *reinterpret_cast<const float2*>(rk + 64 * a + 8 * kk + 2 * tig);
          float* sv = S[8 * a + kk];
          sv[0] = fmaf(acc[a][kk][0], inv0 * r.x, sv[0]) * GC;
          sv[1] = fmaf(acc[a][kk][1], inv0 * r.y, sv[1]) * GC;
          sv[2] = fmaf(acc[a][kk][2], inv1 * r.x, sv[2]) * GC;
          sv[3] = fmaf(acc[a][kk][3], inv1 * r.y, sv[3]) * GC;
        }""", """      const float GC = gsc[C - 1];
      const float rkc = sm[W::RK + nb * DP];
      const float f0 = inv0 * rkc, f1 = inv1 * rkc;  // powers of two: exact
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          float* sv = S[8 * a + kk];
          sv[0] = fmaf(acc[a][kk][0], f0, sv[0]) * GC;
          sv[1] = fmaf(acc[a][kk][1], f0, sv[1]) * GC;
          sv[2] = fmaf(acc[a][kk][2], f1, sv[2]) * GC;
          sv[3] = fmaf(acc[a][kk][3], f1, sv[3]) * GC;
        }""")
sub("""// (a column of A) and by state column i for K^T Vt (a column of its accumulator, unscaled in the update).""",
    """// (a column of A) and, v56, by chunk for K^T Vt (the whole accumulator, unscaled in the update).""")
src = src.replace('name="sgd_v54_famat"', 'name="sgd_v56_kuni"').replace("sgd_v54_forward", "sgd_v56_forward")
src = "# v56_kuni: v54_famat (below) with K^T Vt's k pieces under one scale a chunk (D = 128).\n" + src
(ROOT / ".gpu/v56_kuni.py").write_text(src)
print("wrote v56_kuni")
