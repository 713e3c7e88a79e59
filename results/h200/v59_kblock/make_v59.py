"""Write .gpu/v59a_kblock.py and .gpu/v59b_prep_after_qs0.py from candidates/scalar_gated_delta/v56_kuni.py
(session 25). v58a's probe read one prep split block at 1,900-2,200 cycles without v56's k maximum pass and prep
barrier, against 3,170 with them, and the consumers' Q S0 at ~2,400 cycles while the prep's split (which converts
through the same quarter-rate F2FP path) ran elsewhere in the chunk, against ~2,900 in v56.
v59a: v56 with K^T Vt's k pieces under one scale a block of 32 state columns (each warp's own maximum, no maximum
pass over the chunk and no prep barrier before the split), the update taking one factor a block; v56's twelve
blocks, two a warp at most, before the vote.
v59b: v59a with the prep starting a chunk's split only once the consumers have converted S^T for Q S0's last group
(named barrier 3: the consumers arrive, the prep warps wait), so the two roles' conversions do not overlap."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:200], src.count(old))
    src = src.replace(old, new)


sub("""  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale for K^T Vt, one a chunk), 2 chunks of DP""",
    """  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale for K^T Vt, one a block of 32 columns), 2 chunks
                                                    // of DP (4 used)""")
sub("""  static constexpr int KMX = SF + 4;               // each prep warp's share of k's largest |value|
  static constexpr int TOTAL = KMX + 8;""", """  static constexpr int TOTAL = SF + 4;""")
# the k split by state column: its own scale for the block (the warp's 32 columns x 32 steps)
sub("""// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps) into K hi / lo under the chunk's
// scale sc.
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float sc, int g, int lane) {
  constexpr int DPS = WshCfg::DPS;
  const int i = 32 * g + lane;
  float x[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) x[s] = kr[s * DPS + i];""",
    """// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps) into K hi / lo under one scale for
// the block (v59: its largest |value|); 1 / scale into rk[g].
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float* rk, int g, int lane) {
  constexpr int DPS = WshCfg::DPS;
  const int i = 32 * g + lane;
  float x[32];
  float m[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    x[s] = kr[s * DPS + i];
    m[s & 3] = fmaxf(m[s & 3], fabsf(x[s]));
  }
  float mm = fmaxf(fmaxf(m[0], m[1]), fmaxf(m[2], m[3]));
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) mm = fmaxf(mm, __shfl_xor_sync(kFull, mm, off));
  float sc, inv;
  pow2_scale(mm, sc, inv);
  if (lane == 0) rk[g] = inv;""")
sub("""  const float* qr = qkb + W::QB;
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
""", """  const float* qr = qkb + W::QB;
  const float* kr = qkb + W::KR;
""")
sub("""      wsh_split_k(kr, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, bt, lane);""",
    """      wsh_split_k(kr, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), sm + W::RK + nb * W::DP, bt, lane);""")
sub("""      const float rkc = sm[W::RK + nb * DP];
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
        }""", """      const float4 rkb = *reinterpret_cast<const float4*>(sm + W::RK + nb * DP);  // a factor a block of 32 columns
      const float rkv[4] = {rkb.x, rkb.y, rkb.z, rkb.w};
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          const float f0 = inv0 * rkv[2 * a + kk / 4], f1 = inv1 * rkv[2 * a + kk / 4];  // powers of two: exact
          float* sv = S[8 * a + kk];
          sv[0] = fmaf(acc[a][kk][0], f0, sv[0]) * GC;
          sv[1] = fmaf(acc[a][kk][1], f0, sv[1]) * GC;
          sv[2] = fmaf(acc[a][kk][2], f1, sv[2]) * GC;
          sv[3] = fmaf(acc[a][kk][3], f1, sv[3]) * GC;
        }""")
sub("""// (a column of A) and, v56, by chunk for K^T Vt (the whole accumulator, unscaled in the update).""",
    """// (a column of A) and, v59, by block of 32 state columns for K^T Vt (unscaled in the update).""")
V59A = src
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v59a_kblock"').replace("sgd_v56_forward", "sgd_v59a_forward")
src = ("# v59a_kblock: v56_kuni (below) with K^T Vt's k pieces under one scale a block of 32 state columns, no maximum "
       "pass and no prep barrier before the split (D = 128).\n" + src)
(ROOT / ".gpu/v59a_kblock.py").write_text(src)
print("wrote v59a_kblock")

# ---- v59b: the prep's split after the consumers' last S^T conversion for Q S0
src = V59A
sub("""template <int N>
__device__ __forceinline__ void producer_sync() { asm volatile("bar.sync 2, %0;" ::"n"(N) : "memory"); }""",
    """template <int N>
__device__ __forceinline__ void producer_sync() { asm volatile("bar.sync 2, %0;" ::"n"(N) : "memory"); }
// v59b: the consumers (256 threads) signal the prep warps (224) that they have converted S^T for the chunk's Q S0.
__device__ __forceinline__ void qs0_converted_arrive() { asm volatile("bar.arrive 3, 480;" ::: "memory"); }
__device__ __forceinline__ void qs0_converted_wait() { asm volatile("bar.sync 3, 480;" ::: "memory"); }""")
sub("""  const int nb = c & 1;
  const float* gsm = vb + W::GR;
  const float* bsm = vb + W::BR;
  float G = (lane < n) ? gsm[lane] : 1.f;""", """  const int nb = c & 1;
  const float* gsm = vb + W::GR;
  const float* bsm = vb + W::BR;
  static_assert(W::NCW * 32 + W::NP == 480, "barrier 3's count");
  if (c > 0) qs0_converted_wait();  // chunk c - 1's consumers are past their conversions for Q S0 (v59b)
  float G = (lane < n) ? gsm[lane] : 1.f;""")
sub("""            split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ah[u][3], al[u][3]);
          }
""", """            split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ah[u][3], al[u][3]);
          }
          if (qb == 8 / W::QG - 1 && ch + 1 < nchunks) qs0_converted_arrive();  // the prep may split chunk c + 1
""")
sub("""    const float* vsm = cur + W::VR;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    if (!sfl[nb]) {""", """    const float* vsm = cur + W::VR;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    if ((sfl[nb] || ch == 0) && ch + 1 < nchunks) qs0_converted_arrive();  // no Q S0 conversion in this chunk
    if (!sfl[nb]) {""")
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v59b_prep_after_qs0"').replace("sgd_v56_forward", "sgd_v59b_forward")
src = ("# v59b_prep_after_qs0: v59a_kblock with the prep's split waiting for the consumers' S^T conversion for Q S0 "
       "(D = 128).\n" + src)
(ROOT / ".gpu/v59b_prep_after_qs0.py").write_text(src)
print("wrote v59b_prep_after_qs0")
