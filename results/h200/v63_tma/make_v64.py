"""Write .gpu/v64_avt.py from .gpu/v63b_tma.py (make_v63b.py; session 27). v63b's prep warps arrive ~3,000 cycles
before the consumers, whose chain sets the chunk; A Vt there is 30 mma.sync (3xTF32) a warp with 40 A loads and 80
TF32 splits, after a TF32 split of Vt^T and before an fp16 re-split of it for K^T Vt. v64 takes v57's A Vt on fp16
wgmma (A's pieces from the prep warpgroup, Vt^T's split once at the chunk's top, 6 wgmma in Q S0's last group) with
v57's precision fault mended: its single row scale of Vt^T = beta_s v_s / G_s over 32 steps flushed the steps before
a tiny gate. Here the gate ratios sit where they stay bounded: A' = A_ts G_t / G_s (at most 1 where s <= t) for
A Vt, and K'' = k_s / G_s (K^T Vt's sum is multiplied by G_C, which makes the flushed steps' share as small as what
they lose) for K^T Vt, so the consumers split one Vt'' = beta_s v_s for both products:
y_t = G_t (Q S0)_t + sum_s A'_ts Vt''_s, S^T <- G_C (S^T + Vt''^T K'')."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v63b_tma.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


def fsub(anchor, old, new):
    """Replace once after `anchor` (within 20,000 characters)."""
    global src
    k = src.index(anchor)
    assert src.count(old, k, k + 20000) == 1, (old[:200], src.count(old, k, k + 20000))
    i = src.index(old, k)
    src = src[:i] + new + src[i + len(old):]


def ksub(old, new):
    """Replace once inside gd_wsh_kernel."""
    global src
    k = src.index("gd_wsh_kernel(const __grid_constant__")
    assert src.count(old, k, k + 30000) == 1, (old[:200], src.count(old, k, k + 30000))
    i = src.index(old, k)
    src = src[:i] + new + src[i + len(old):]


sub("# v63b_tma: v63_tma (below)", """# v64_avt: v63b_tma (below) with A Vt on fp16 wgmma: A' = A G_t / G_s as fp16 pieces by row from the prep
# warpgroup, K^T Vt's k as k / G_s, so one split of Vt'' = beta v on the consumers feeds both products.
# v63b_tma: v63_tma (below)""")

# ---- shared memory: A's fp16 pieces and row scales instead of A in fp32; 1 / G_s
sub("""  static constexpr int AM = RK + 2 * DP;            // A, 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks""",
    """  static constexpr int A16 = C * C / 2;             // floats of one C x C fp16 array
  static constexpr int AP = RK + 2 * DP;            // A's pieces (wsh_koff by step s, row t): hi, lo of chunk 0, then 1
  static constexpr int RA = AP + 4 * A16;           // 1 / (A's scale) by row t, 2 chunks
  static constexpr int RG = RA + 2 * C;             // 1 / G_s (0 on a safe chunk), 2 chunks
  static constexpr int GS = RG + 2 * C;             // G_t, 2 chunks""")
sub("""  static_assert(QH % 4 == 0 && RQ % 4 == 0 && RK % 4 == 0 && AM % 4 == 0 && MB % 2 == 0, "aligned");""",
    """  static_assert(QH % 4 == 0 && RQ % 4 == 0 && RK % 4 == 0 && AP % 4 == 0 && RA % 4 == 0 && MB % 2 == 0, "aligned");""")

# ---- the k splits: K^T Vt's k as k / G_s, its chunk scale from those values
sub("""template <bool WMAX>
__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane) {""",
    """template <bool WMAX>
__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane,
                                             float rg = 1.f) {""")
sub("""  if (g == 0) rq[t] = inv;
  if (WMAX) {
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 1));""", """  if (g == 0) rq[t] = inv;
  if (WMAX) {  // the largest |x_t| / G_t over the block (rg: this lane's row's 1 / G_t)
    m *= rg;
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 1));""")
sub("""// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps: box g) into K hi / lo under the
// chunk's scale sc.
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float sc, int g, int lane) {
  const int i = 32 * g + lane;
  float x[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) x[s] = kr[wsh_toff(s, i)];""",
    """// k / G_s's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps: box g) into K hi / lo under
// the chunk's scale sc (rg: 1 / G_s by step).
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float sc, const float* rg,
                                            int g, int lane) {
  const int i = 32 * g + lane;
  float x[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) x[s] = kr[wsh_toff(s, i)] * rg[s];""")
fsub("__device__ __forceinline__ void wsh_prepare(", """  if (pw == 0) {
    sm[W::GS + nb * C + lane] = G;
    sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
  }""", """  const float rg = (!pred && lane < n) ? 1.f / G : 0.f;
  if (pw == 0) {
    sm[W::GS + nb * C + lane] = G;
    sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
    sm[W::RG + nb * C + lane] = rg;
  }""")
sub("""                                      reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C,
                                      pw - 4, lane);""", """                                      reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C,
                                      pw - 4, lane, __shfl_sync(kFull, rg, 8 * (pw - 4) + (lane & 7)));""")
sub("""                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, pw - 4, lane);""",
    """                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);""")

# ---- prep: A' = A G_t / G_s stored as fp16 pieces by row t (v57's layout)
sub("""  if (pw >= 2) return;  // rows 32..63: beyond the chunk
  const int t = 16 * pw + gid;
  const float* rq = sm + W::RQ + nb * C;
  const float* rk = sm + W::RKA + nb * C;
  const float r0 = rq[t], r1 = rq[t + 8];
  float* am = sm + W::AM + nb * C * CS;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int s = 8 * nt + 2 * tig;
    const float2 c = *reinterpret_cast<const float2*>(rk + s);
    *reinterpret_cast<float2*>(am + t * CS + s) =
        make_float2((s <= t) ? a[nt][0] * (r0 * c.x) : 0.f, (s + 1 <= t) ? a[nt][1] * (r0 * c.y) : 0.f);
    *reinterpret_cast<float2*>(am + (t + 8) * CS + s) =
        make_float2((s <= t + 8) ? a[nt][2] * (r1 * c.x) : 0.f, (s + 1 <= t + 8) ? a[nt][3] * (r1 * c.y) : 0.f);
  }
}""", """  if (pw >= 2) return;  // rows 32..63: beyond the chunk
  const int t = 16 * pw + gid;
  const float* rq = sm + W::RQ + nb * C;
  const float* rk = sm + W::RKA + nb * C;
  const float* rgs = sm + W::RG + nb * C;
  const float* gs = sm + W::GS + nb * C;
  const float r0 = rq[t] * gs[t], r1 = rq[t + 8] * gs[t + 8];  // q's unscaling and G_t
  float x0[8], x1[8];  // rows t and t + 8, steps 8 nt + 2 tig and + 1: A_ts G_t / G_s, masked
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int s = 8 * nt + 2 * tig;
    const float2 c = *reinterpret_cast<const float2*>(rk + s);
    const float2 rg = *reinterpret_cast<const float2*>(rgs + s);
    const float cx = c.x * rg.x, cy = c.y * rg.y;
    x0[2 * nt] = (s <= t) ? a[nt][0] * r0 * cx : 0.f;
    x0[2 * nt + 1] = (s + 1 <= t) ? a[nt][1] * r0 * cy : 0.f;
    x1[2 * nt] = (s <= t + 8) ? a[nt][2] * r1 * cx : 0.f;
    x1[2 * nt + 1] = (s + 1 <= t + 8) ? a[nt][3] * r1 * cy : 0.f;
    m0 = fmaxf(m0, fmaxf(fabsf(x0[2 * nt]), fabsf(x0[2 * nt + 1])));
    m1 = fmaxf(m1, fmaxf(fabsf(x1[2 * nt]), fabsf(x1[2 * nt + 1])));
  }
  m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
  m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
  m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
  m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
  float s0, i0, s1, i1;
  pow2_scale(m0, s0, i0);
  pow2_scale(m1, s1, i1);
  // A'^T as Vt''^T A'^T's B operand: K = step s (wg_np's order within each 8, as K's), N = row t. A thread's two
  // steps are not adjacent there, so the pieces go out as single halves.
  unsigned short* ah = reinterpret_cast<unsigned short*>(sm + W::AP + 2 * nb * W::A16);
  unsigned short* al = ah + 2 * W::A16;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int s = 8 * nt + 2 * tig;
    uint32_t h, l;
    split_h2(x0[2 * nt] * s0, x0[2 * nt + 1] * s0, h, l);
    ah[wsh_koff(s, t)] = (unsigned short)(h & 0xffffu);
    ah[wsh_koff(s + 1, t)] = (unsigned short)(h >> 16);
    al[wsh_koff(s, t)] = (unsigned short)(l & 0xffffu);
    al[wsh_koff(s + 1, t)] = (unsigned short)(l >> 16);
    split_h2(x1[2 * nt] * s1, x1[2 * nt + 1] * s1, h, l);
    ah[wsh_koff(s, t + 8)] = (unsigned short)(h & 0xffffu);
    ah[wsh_koff(s + 1, t + 8)] = (unsigned short)(h >> 16);
    al[wsh_koff(s, t + 8)] = (unsigned short)(l & 0xffffu);
    al[wsh_koff(s + 1, t + 8)] = (unsigned short)(l >> 16);
  }
  if (tig == 0) {
    sm[W::RA + nb * C + t] = i0;
    sm[W::RA + nb * C + t + 8] = i1;
  }
  wg_proxy_fence();  // A's pieces visible to the consumers' wgmma after the CTA barrier
}""")

# ---- consumers: Vt'' = beta v split once at the top (A operand of A Vt and K^T Vt)
sub("""// Vt^T fragments of chunk c (A operand, rows j0 and j0 + 8, k = s) for every s step, split, from v's TMA tile.
__device__ __forceinline__ void wsh_vt_frags(uint32_t (&vh)[4][4], uint32_t (&vl)[4][4], const float* vt,
                                             const float* cfs, int j0, int tig) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int s0 = 8 * ks + tig;
    const float ca = cfs[s0];
    const float cb = cfs[s0 + 4];
    split(vt[wsh_toff(s0, j0)] * ca, vh[ks][0], vl[ks][0]);
    split(vt[wsh_toff(s0, j0 + 8)] * ca, vh[ks][1], vl[ks][1]);
    split(vt[wsh_toff(s0 + 4, j0)] * cb, vh[ks][2], vl[ks][2]);
    split(vt[wsh_toff(s0 + 4, j0 + 8)] * cb, vh[ks][3], vl[ks][3]);
  }
}""", """// Vt''^T = (beta_s v_s)^T's rows j0, j0 + 8 (this thread's steps 8 ks + tig and + 4) from v's TMA tile into fp16
// pieces under a power-of-two scale a row (1 / scale: iv0, iv1), packed in pairs of those steps, the order wg_np
// gives K's and A's layouts (wsh_koff): the A operand of Vt''^T A'^T and Vt''^T K''.
__device__ __forceinline__ void wsh_vt_pieces(uint32_t (&wh)[2][4], uint32_t (&wl)[2][4], float& iv0, float& iv1,
                                              const float* vt, const float* bs, int j0, int tig) {
  float x[4][4];
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int s0 = 8 * ks + tig;
    const float ca = bs[s0];
    const float cb = bs[s0 + 4];
    x[ks][0] = vt[wsh_toff(s0, j0)] * ca;
    x[ks][1] = vt[wsh_toff(s0, j0 + 8)] * ca;
    x[ks][2] = vt[wsh_toff(s0 + 4, j0)] * cb;
    x[ks][3] = vt[wsh_toff(s0 + 4, j0 + 8)] * cb;
    m0 = fmaxf(m0, fmaxf(fabsf(x[ks][0]), fabsf(x[ks][2])));
    m1 = fmaxf(m1, fmaxf(fabsf(x[ks][1]), fabsf(x[ks][3])));
  }
  m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
  m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
  m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
  m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
  float s0, s1;
  pow2_scale(m0, s0, iv0);
  pow2_scale(m1, s1, iv1);
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    split_h2(x[2 * m][0] * s0, x[2 * m][2] * s0, wh[m][0], wl[m][0]);
    split_h2(x[2 * m][1] * s1, x[2 * m][3] * s1, wh[m][1], wl[m][1]);
    split_h2(x[2 * m + 1][0] * s0, x[2 * m + 1][2] * s0, wh[m][2], wl[m][2]);
    split_h2(x[2 * m + 1][1] * s1, x[2 * m + 1][3] * s1, wh[m][3], wl[m][3]);
  }
}

__device__ __forceinline__ void wsh_zero(float (&p)[4][4]) {
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) p[nt][e] = 0.f;
}

// O^T's A Vt part (64 x 32 per warpgroup) += Vt''^T (64 x 32, fp16 pieces in registers) A'^T (32 x 32, fp16 pieces in
// shared memory, wsh_koff's layout): 2 k steps x 3 wgmma m64n32k16, the small terms first.
__device__ __forceinline__ void wsh_avt(float (&p)[4][4], const uint32_t (&wh)[2][4], const uint32_t (&wl)[2][4],
                                        const float* ah, const float* al) {
#pragma unroll
  for (int m = 0; m < 2; ++m) {  // steps 16 m ..: 128 halves
    const uint64_t dh = wg_desc(ah + 64 * m, 128, 512), dl = wg_desc(al + 64 * m, 128, 512);
    wh_mma_n32(p, wl[m], dh);
    wh_mma_n32(p, wh[m], dl);
    wh_mma_n32(p, wh[m], dh);
  }
}""")
ksub("""      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      wsh_vt_frags(vh, vl, vsm, cfs, j0, tig);
      WSH_MARK(1, ch);""", """      uint32_t wh[2][4], wl[2][4];
      float iv0, iv1;
      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, j0, tig);
      const float* aph = sm + W::AP + 2 * nb * W::A16;
      const float* apl = aph + W::A16;
      float P[4][4];  // O^T's A Vt part, under Vt''^T's row scales and A''s (zeroed where its group starts)
      float gy[4][2];  // G_t of this thread's y rows
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        gy[nt][0] = gsc[8 * nt + 2 * tig];
        gy[nt][1] = gsc[8 * nt + 2 * tig + 1];
      }
      WSH_MARK(1, ch);""")
QS0_A = """          wg_keep(O);
          wg_keep(ah);
          wg_keep(al);
          wg_fence();
#pragma unroll
          for (int u = 0; u < W::QG; ++u) {
            const int kk = W::QG * qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);
            const uint64_t dl = wg_desc(reinterpret_cast<const float*>(ql) + 64 * kk, 128, 2048);
            wh_mma_n32(O, al[u], dh);
            wh_mma_n32(O, ah[u], dl);
            wh_mma_n32(O, ah[u], dh);
          }
          wg_commit();
          wg_wait0();
          wg_keep(O);
          wg_keep(ah);
          wg_keep(al);
        }
        const float* rq = sm + W::RQ + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 r = *reinterpret_cast<const float2*>(rq + 8 * nt + 2 * tig);
          O[nt][0] *= pinv0 * r.x;
          O[nt][1] *= pinv0 * r.y;
          O[nt][2] *= pinv1 * r.x;
          O[nt][3] *= pinv1 * r.y;
        }
      }
"""
QS0_A = QS0_A.replace("pinv", "inv")
ksub(QS0_A, """          if (qb == 8 / W::QG - 1) wsh_zero(P);
          wg_keep(O);
          wg_keep(ah);
          wg_keep(al);
          wg_keep(P);
          wg_keep(wh);
          wg_keep(wl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < W::QG; ++u) {
            const int kk = W::QG * qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);
            const uint64_t dl = wg_desc(reinterpret_cast<const float*>(ql) + 64 * kk, 128, 2048);
            wh_mma_n32(O, al[u], dh);
            wh_mma_n32(O, ah[u], dl);
            wh_mma_n32(O, ah[u], dh);
          }
          if (qb == 8 / W::QG - 1) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group
          wg_commit();
          wg_wait0();
          wg_keep(O);
          wg_keep(ah);
          wg_keep(al);
          wg_keep(P);
          wg_keep(wh);
          wg_keep(wl);
        }
        // y_t = G_t (Q S0)_t + (A' Vt'')_t
        const float* rq = sm + W::RQ + nb * C;
        const float* ra = sm + W::RA + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 r = *reinterpret_cast<const float2*>(rq + 8 * nt + 2 * tig);
          const float2 p = *reinterpret_cast<const float2*>(ra + 8 * nt + 2 * tig);
          O[nt][0] = fmaf(P[nt][0], iv0 * p.x, O[nt][0] * (inv0 * r.x) * gy[nt][0]);
          O[nt][1] = fmaf(P[nt][1], iv0 * p.y, O[nt][1] * (inv0 * r.y) * gy[nt][1]);
          O[nt][2] = fmaf(P[nt][2], iv1 * p.x, O[nt][2] * (inv1 * r.x) * gy[nt][0]);
          O[nt][3] = fmaf(P[nt][3], iv1 * p.y, O[nt][3] * (inv1 * r.y) * gy[nt][1]);
        }
      } else {  // chunk 0: S is zero, A Vt alone
        wsh_zero(P);
        wg_keep(P);
        wg_keep(wh);
        wg_keep(wl);
        wg_fence();
        wsh_avt(P, wh, wl, aph, apl);
        wg_commit();
        wg_wait0();
        wg_keep(P);
        wg_keep(wh);
        wg_keep(wl);
        const float* ra = sm + W::RA + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 p = *reinterpret_cast<const float2*>(ra + 8 * nt + 2 * tig);
          O[nt][0] = P[nt][0] * (iv0 * p.x);
          O[nt][1] = P[nt][1] * (iv0 * p.y);
          O[nt][2] = P[nt][2] * (iv1 * p.x);
          O[nt][3] = P[nt][3] * (iv1 * p.y);
        }
      }
""")
ksub("""      WSH_MARK(2, ch);
      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        gy[nt][0] = gsc[8 * nt + 2 * tig];
        gy[nt][1] = gsc[8 * nt + 2 * tig + 1];
      }
      // + Vt^T A^T, mma.sync, 3xTF32
      const float* am = sm + W::AM + nb * C * CS;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          if (nt < ks) continue;
          const int ta = (8 * nt + gid) * CS + 8 * ks + tig;
          uint32_t bh0, bl0, bh1, bl1;
          split(am[ta], bh0, bl0);
          split(am[ta + 4], bh1, bl1);
          mma3(O[nt], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
        }
      }
""", "      WSH_MARK(2, ch);\n")
# y stores: G_t is inside O now
for old in ["          yr[8 * nt * rs] = O[nt][0] * gy[nt][0];\n          yr[8 * nt * rs + 8] = O[nt][2] * gy[nt][0];\n"
            "          yr[(8 * nt + 1) * rs] = O[nt][1] * gy[nt][1];\n          yr[(8 * nt + 1) * rs + 8] = O[nt][3] * gy[nt][1];\n",
            "            yb[t * rs + j0] = O[nt][0] * gy[nt][0];\n            yb[t * rs + j0 + 8] = O[nt][2] * gy[nt][0];\n",
            "            yb[(t + 1) * rs + j0] = O[nt][1] * gy[nt][1];\n            yb[(t + 1) * rs + j0 + 8] = O[nt][3] * gy[nt][1];\n"]:
    ksub(old, old.replace(" * gy[nt][0]", "").replace(" * gy[nt][1]", ""))
ksub("""      // ---- S^T = G_C (S^T + Vt^T K): Vt^T's TF32 pieces summed back (exactly) and split in fp16 by row, 2 k steps
      // x 2 column blocks x 3 wgmma m64n64k16 into fresh accumulators, unscaled by row and column in the update.
      float x[4][4];
      float m0 = 0.f, m1 = 0.f;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          x[ks][e] = __uint_as_float(vh[ks][e]) + __uint_as_float(vl[ks][e] - 0x1000u);
          if (e == 0 || e == 2) m0 = fmaxf(m0, fabsf(x[ks][e]));
          else m1 = fmaxf(m1, fabsf(x[ks][e]));
        }
      m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
      m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
      m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
      m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
      float s0, inv0, s1, inv1;
      pow2_scale(m0, s0, inv0);
      pow2_scale(m1, s1, inv1);
      uint32_t wh[2][4], wl[2][4];
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        split_h2(x[2 * m][0] * s0, x[2 * m][2] * s0, wh[m][0], wl[m][0]);
        split_h2(x[2 * m][1] * s1, x[2 * m][3] * s1, wh[m][1], wl[m][1]);
        split_h2(x[2 * m + 1][0] * s0, x[2 * m + 1][2] * s0, wh[m][2], wl[m][2]);
        split_h2(x[2 * m + 1][1] * s1, x[2 * m + 1][3] * s1, wh[m][3], wl[m][3]);
      }
""", """      // ---- S^T = G_C (S^T + Vt''^T K''): Vt''^T's pieces (the chunk's top) x K''s, 2 k steps x 2 column blocks x 3
      // wgmma m64n64k16 into fresh accumulators, unscaled by row and chunk in the update.
""")
ksub("""      const float f0 = inv0 * rkc, f1 = inv1 * rkc;  // powers of two: exact""",
     """      const float f0 = iv0 * rkc, f1 = iv1 * rkc;  // powers of two: exact""")
src = src.replace('name="sgd_v63b_tma"', 'name="sgd_v64_avt"').replace("sgd_v63b_forward", "sgd_v64_forward")
(ROOT / ".gpu/v64_avt.py").write_text(src)
print("wrote .gpu/v64_avt.py")
