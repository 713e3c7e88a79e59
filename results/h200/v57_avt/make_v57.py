"""Write .gpu/v57a_avt_wg.py and .gpu/v57b_avt_nfuse.py from candidates/scalar_gated_delta/v56_kuni.py (session 25).

v57a: A Vt on fp16 wgmma. The first prep warpgroup stores A (masked, unscaled by step) as fp16 pieces under a
power-of-two scale a row t, in K's layout (wsh_koff: step s along K, t along N), so A^T is a wgmma B operand. The
consumers split Vt^T into fp16 pieces by row once, at the chunk's top (the same registers then feed K^T Vt), and
issue Vt^T A^T as 2 k steps x 3 wgmma m64n32k16 into a second accumulator in Q S0's last group: no mma.sync, no
TF32 fragments, no A loads or splits on the consumers.
v57b: v57a with Q S0 fused along N: q's hi and lo pieces of a chunk adjacent, so S^T lo and S^T hi each times
[Q^T hi | Q^T lo] is one wgmma m64n64k16 a k step (16 wgmma a warpgroup instead of 24, a third more tensor work: the
lo x lo term comes along), the halves summed after. (An m64n32k16 for S^T lo x Q^T hi into the first half of the same
accumulator, or A Vt in a group of its own, made ptxas serialise every wgmma of the kernel, warning C7511.) Tests
whether Q S0's wgmma time goes by instruction or by tensor work."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()
src = BASE


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:200], src.count(old))
    src = src.replace(old, new)


# ---- shared memory: A's fp16 pieces (and 1 / scale a row) instead of A in fp32
sub("""  static constexpr int AM = RK + 2 * DP;            // A, 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks""",
    """  static constexpr int A16 = C * C / 2;             // floats of one C x C fp16 array
  static constexpr int AP = RK + 2 * DP;            // A's pieces (wsh_koff by step s, row t): hi, lo of chunk 0, then 1
  static constexpr int RA = AP + 4 * A16;           // 1 / (A's scale) by row t, 2 chunks
  static constexpr int GS = RA + 2 * C;             // G_t, 2 chunks""")
sub("""                AM % 4 == 0, "16-byte aligned");""", """                AP % 4 == 0 && A16 % 4 == 0, "16-byte aligned");""")

# ---- prep: A stored as fp16 pieces by row
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
  const float r0 = rq[t], r1 = rq[t + 8];
  float x0[8], x1[8];  // rows t and t + 8, steps 8 nt + 2 tig and + 1
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int s = 8 * nt + 2 * tig;
    const float2 c = *reinterpret_cast<const float2*>(rk + s);
    x0[2 * nt] = (s <= t) ? a[nt][0] * (r0 * c.x) : 0.f;
    x0[2 * nt + 1] = (s + 1 <= t) ? a[nt][1] * (r0 * c.y) : 0.f;
    x1[2 * nt] = (s <= t + 8) ? a[nt][2] * (r1 * c.x) : 0.f;
    x1[2 * nt + 1] = (s + 1 <= t + 8) ? a[nt][3] * (r1 * c.y) : 0.f;
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
  // A^T as Vt^T A^T's B operand: K = step s (wg_np's order within each 8, as K's), N = row t. A thread's two steps
  // are not adjacent there, so the pieces go out as single halves.
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
sub("""// A = causal(Q K^T) of chunk c on the first prep warpgroup (warps pw 0..3, rows t = 16 pw + gid and + 8): 8 k steps
// x 3 wgmma from the fp16 pieces, unscaled by step (q's scale for t, k's for s), masked and stored for A Vt.""",
    """// A = causal(Q K^T) of chunk c on the first prep warpgroup (warps pw 0..3, rows t = 16 pw + gid and + 8): 8 k steps
// x 3 wgmma from the fp16 pieces, unscaled by step (q's scale for t, k's for s), masked, and stored for A Vt as fp16
// pieces under a power-of-two scale a row t (v57).""")

# ---- consumers: Vt^T's pieces at the top; A Vt on wgmma
sub("""// d (64 x 64 per warpgroup) += a (64 x 16 fp16, registers) * b (16 x 64 fp16, shared memory, K-major).""",
    """// Vt^T's rows j0, j0 + 8 (this thread's steps 8 ks + tig and + 4, as a TF32 fragment holds them) into fp16 pieces
// under a power-of-two scale a row (1 / scale: iv0, iv1), packed in pairs of those steps, the order wg_np gives K's
// and A's layouts (wsh_koff): the A operand of Vt^T A^T and Vt^T K.
__device__ __forceinline__ void wsh_vt_pieces(uint32_t (&wh)[2][4], uint32_t (&wl)[2][4], float& iv0, float& iv1,
                                              const float* vsm, const float* cfs, int j0, int tig) {
  constexpr int NCS = WshCfg::NCS;
  float x[4][4];
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int s0 = 8 * ks + tig;
    const float ca = cfs[s0];
    const float cb = cfs[s0 + 4];
    x[ks][0] = vsm[s0 * NCS + j0] * ca;
    x[ks][1] = vsm[s0 * NCS + j0 + 8] * ca;
    x[ks][2] = vsm[(s0 + 4) * NCS + j0] * cb;
    x[ks][3] = vsm[(s0 + 4) * NCS + j0 + 8] * cb;
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

// d (64 x 64 per warpgroup) += a (64 x 16 fp16, registers) * b (16 x 64 fp16, shared memory, K-major).""")
sub("""// A (64 x 32 per warpgroup) += q (64 x 16 fp16, shared memory;""",
    """__device__ __forceinline__ void wsh_zero(float (&p)[4][4]) {
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) p[nt][e] = 0.f;
}

// O^T's A Vt part (64 x 32 per warpgroup) += Vt^T (64 x 32, fp16 pieces in registers) A^T (32 x 32, fp16 pieces in
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
}

// A (64 x 32 per warpgroup) += q (64 x 16 fp16, shared memory;""")
sub("""      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      // ---- O^T = S^T Q^T: 8 k steps""", """      const float* cfs = sm + W::CF + nb * C;
      uint32_t wh[2][4], wl[2][4];
      float iv0, iv1;
      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cfs, j0, tig);
      const float* aph = sm + W::AP + 2 * nb * W::A16;
      const float* apl = aph + W::A16;
      float P[4][4];  // O^T's A Vt part, under Vt^T's row scales and A's (zeroed where its group starts)
      // ---- O^T = S^T Q^T: 8 k steps""")
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
          O[nt][0] *= inv0 * r.x;
          O[nt][1] *= inv0 * r.y;
          O[nt][2] *= inv1 * r.x;
          O[nt][3] *= inv1 * r.y;
        }
      }
"""
COMBINE = """        const float* rq = sm + W::RQ + nb * C;
        const float* ra = sm + W::RA + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 r = *reinterpret_cast<const float2*>(rq + 8 * nt + 2 * tig);
          const float2 p = *reinterpret_cast<const float2*>(ra + 8 * nt + 2 * tig);
          O[nt][0] = fmaf(P[nt][0], iv0 * p.x, O[nt][0] * (inv0 * r.x));
          O[nt][1] = fmaf(P[nt][1], iv0 * p.y, O[nt][1] * (inv0 * r.y));
          O[nt][2] = fmaf(P[nt][2], iv1 * p.x, O[nt][2] * (inv1 * r.x));
          O[nt][3] = fmaf(P[nt][3], iv1 * p.y, O[nt][3] * (inv1 * r.y));
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
"""
sub(QS0_A, """          if (qb == 8 / W::QG - 1) wsh_zero(P);
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
""" + COMBINE)
sub("""      // + Vt^T A^T, mma.sync, 3xTF32
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
""", "")
sub("""      // ---- S^T = G_C (S^T + Vt^T K): Vt^T's TF32 pieces summed back (exactly) and split in fp16 by row, 2 k steps
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
""", """      // ---- S^T = G_C (S^T + Vt^T K): Vt^T's pieces (the chunk's top) x K's, 2 k steps x 2 column blocks x 3 wgmma
      // m64n64k16 into fresh accumulators, unscaled by row and chunk in the update.
""")
sub("""      const float f0 = inv0 * rkc, f1 = inv1 * rkc;  // powers of two: exact""",
    """      const float f0 = iv0 * rkc, f1 = iv1 * rkc;  // powers of two: exact""")
sub("""// three, and the safe path reads the pieces. A Vt stays 3xTF32 on mma.sync.""",
    """// three, and the safe path reads the pieces. v57: A Vt on fp16 wgmma too (A's pieces by row t, stored by the prep
// warpgroup; Vt^T's by row j, split once at the chunk's top for A Vt and K^T Vt).""")
V57A = src


def finish(text, tag, head):
    text = text.replace('name="sgd_v56_kuni"', f'name="sgd_{tag}"').replace("sgd_v56_forward", f"sgd_{tag.split('_')[0]}_forward")
    return head + text


(ROOT / ".gpu/v57a_avt_wg.py").write_text(finish(
    V57A, "v57a_avt_wg", "# v57a_avt_wg: v56_kuni (below) with A Vt on fp16 wgmma: A's pieces by row from the prep "
    "warpgroup, Vt^T's split once (D = 128).\n"))
print("wrote v57a_avt_wg")

# ---- v57b: Q S0 fused along N (q's hi and lo adjacent), A Vt in a group of its own
src = V57A
sub("""  static constexpr int QL = QH + 2 * H16;           // q lo""",
    """  static constexpr int QL = QH + H16;               // q lo (v57b: right after the chunk's hi, so hi | lo is one
                                                    // N = 64 operand)""")
sub("""  static constexpr int KAH = QL + 2 * H16;""", """  static constexpr int KAH = QH + 4 * H16;""")
n_qh = src.count("W::QH + nb * W::H16")
n_ql = src.count("W::QL + nb * W::H16")
assert n_qh == 4 and n_ql == 4, (n_qh, n_ql)
src = src.replace("W::QH + nb * W::H16", "W::QH + 2 * nb * W::H16").replace("W::QL + nb * W::H16", "W::QL + 2 * nb * W::H16")
sub("""      // ---- O^T = S^T Q^T: 8 k steps x 3 wgmma m64n32k16 in two groups (the pieces of a group are 32 registers);
      // S^T's rows scaled for the pieces, undone with q's step scales afterwards.
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;""",
    """      // ---- O^T = S^T Q^T: 8 k steps x 2 wgmma m64n64k16, S^T lo and hi times [Q^T hi | Q^T lo] (lo x lo comes along),
      // in two groups (the pieces of a group are 32 registers), the halves summed after; S^T's rows scaled for the
      // pieces, undone with q's step scales afterwards.
      float O[4][4];
      float O2[8][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O2[nt][e] = 0.f;
""")
sub("""          if (qb == 8 / W::QG - 1) wsh_zero(P);
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
""", """          if (qb == 8 / W::QG - 1) wsh_zero(P);
          wg_keep(O2);
          wg_keep(ah);
          wg_keep(al);
          wg_keep(P);
          wg_keep(wh);
          wg_keep(wl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < W::QG; ++u) {
            const int kk = W::QG * qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);  // hi, then lo
            wh_mma_n64(O2, al[u], dh);
            wh_mma_n64(O2, ah[u], dh);
          }
          if (qb == 8 / W::QG - 1) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group
          wg_commit();
          wg_wait0();
          wg_keep(O2);
""")
sub("""          wg_keep(wl);
        }
        const float* rq = sm + W::RQ + nb * C;
        const float* ra""", """          wg_keep(wl);
        }
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) O[nt][e] = O2[nt][e] + O2[nt + 4][e];
        const float* rq = sm + W::RQ + nb * C;
        const float* ra""")
V57B = src
(ROOT / ".gpu/v57b_avt_nfuse.py").write_text(finish(
    V57B, "v57b_avt_nfuse", "# v57b_avt_nfuse: v57a_avt_wg (below) with Q S0 fused along N (S^T pieces x [Q^T hi | Q^T lo]), "
    "A Vt after it (D = 128).\n"))
print("wrote v57b_avt_nfuse")
