"""Write .gpu/v68a_apair.py, .gpu/v68b_cpipe.py and .gpu/v68c_both.py from .gpu/v67_iter.py (make_v67.py; session 28).

Session 28's call 1 measured v67 at 524 us beside v64's 520 (no gain from its ~170 fewer consumer instructions a warp
a chunk), and probe63 on both: the consumers arrive last (top ~900, Q S0 ~4,060, y ~790, K^T Vt ~1,190, update
~340 cycles) and prep warpgroup 0 ~400-475 cycles before them (round two ~3,600 on warps 8-9, of which ~1,150 is
A's post-processing that warps 10-11, holding A's discarded rows 32..63, do not share). Two changes, one a side:

- a (prep): A = Q K^T from q's pieces stacked as one 64-row operand, [q hi; q lo] (q lo's array placed right after
  q hi's, chunk by chunk), times K hi and K lo: 16 `m64n32k16` instead of 24, no row discarded (q lo k lo is added
  too). Warps pw and pw ^ 2 hold the hi and lo parts of the same steps; each keeps one of its two rows, hands the
  other to its partner through 4 KB of shared memory (a 128-thread barrier), and post-processes 8 rows instead of 16
  (warps 10-11 take half of 8-9's work). Not bitwise v67 (summation order, and q lo k lo).
- b (consumers): Q S0 in four groups of two k steps with two register buffers of pieces, so each group's split runs
  while the previous group's wgmma execute (`wgmma.wait_group 1`; the registers of v67's one buffer of four steps).
  Same products in the same order: bitwise v67. (K^T Vt issued before y's stores, to overlap them, spilled 360-420
  bytes in local compiles and is not in any file that ran: `kt_before_stores` below.)
- c: both.
- d (a control): v68a's q layout alone (q hi and q lo of a chunk adjacent; A still 24 wgmma with rows 32..63, now q
  lo's, discarded): bitwise v67. v60_astack (session 25) made a's change on v56 and ran 47 us slower, not understood;
  d says whether the layout costs time."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
base = (ROOT / ".gpu/v67_iter.py").read_text()
src = base


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


def q_layout():
    # q lo of chunk nb right after q hi of chunk nb (rows 32..63 of the stacked operand)
    sub("sm + W::QH + nb * W::H16", "sm + W::QH + 2 * nb * W::H16", count=4)
    sub("sm + W::QL + nb * W::H16", "sm + W::QH + (2 * nb + 1) * W::H16", count=4)
    sub("""  static constexpr int QH = GB + NBUF * GBUF;       // q hi (wsh_qoff by step), 2 chunks
  static constexpr int QL = QH + 2 * H16;           // q lo""",
        """  static constexpr int QH = GB + NBUF * GBUF;       // q hi then q lo (wsh_qoff by step) of chunk 0, then of 1
  static constexpr int QL = QH + 2 * H16;           // (the end of chunk 0's pieces)""")


def prep_pair():
    q_layout()
    sub("""  static constexpr int MB = KMX + 4;                // NBUF mbarriers (8 bytes each), a chunk's TMA each""",
        """  static constexpr int XA = KMX + 4;                // A's hand-over between prep warps pw and pw ^ 2: 256 float4
  static constexpr int MB = XA + 1024;              // NBUF mbarriers (8 bytes each), a chunk's TMA each""")
    sub("""AP % 4 == 0 && RA % 4 == 0 && MB % 2 == 0, "aligned");""",
        """AP % 4 == 0 && RA % 4 == 0 && XA % 4 == 0 && MB % 2 == 0, "aligned");""")
    start = src.index("// A = causal(Q K^T) of chunk c on the first prep warpgroup")
    end = src.index("// Steps 8 tb .. 8 tb + 7 of q or k (one warp, a raw tile)")
    new_amat = r'''// A = causal(Q K^T) of chunk c on the first prep warpgroup: the stacked operand [q hi; q lo] (64 rows) times K hi
// and K lo, 8 k steps x 2 wgmma. Rows 0..31 hold q hi k, rows 32..63 q lo k: warp pw (rows 16 pw + gid, + 8) and
// warp pw ^ 2 hold the two parts of steps t = 16 (pw & 1) + gid and + 8. Warps 0-1 keep row t, warps 2-3 row t + 8,
// each handing the other row's part to its partner; then the row is unscaled by step (q's scale for t, k's for s),
// masked and stored for A Vt.
__device__ __forceinline__ void wsh_amat(float* sm, int nb, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C;
  const float* qp = sm + W::QH + 2 * nb * W::H16;
  const float* kh = sm + W::KAH + nb * W::H16;
  const float* kl = sm + W::KAL + nb * W::H16;
  float a[4][4];
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[nt][e] = 0.f;
  wg_keep(a);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {  // columns 16 kk ..: 128 halves (64 floats) a step
    const uint64_t dq = wg_desc(qp + 64 * kk, 128, 2048);
    const uint64_t dkh = wg_desc(kh + 64 * kk, 128, 2048), dkl = wg_desc(kl + 64 * kk, 128, 2048);
    wh_mma_ss_n32(a, dq, dkl);
    wh_mma_ss_n32(a, dq, dkh);
  }
  wg_commit();
  wg_wait0();
  wg_keep(a);
  const bool top = pw < 2;  // keeps e = 0, 1 (row 16 pw + gid), hands e = 2, 3 over
  const int lane = 4 * gid + tig;
  float4* xa = reinterpret_cast<float4*>(sm + W::XA);
  float kp[8], hp[8];  // this thread's kept and handed-over parts (constant indices only: no local memory)
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    kp[2 * nt] = top ? a[nt][0] : a[nt][2];
    kp[2 * nt + 1] = top ? a[nt][1] : a[nt][3];
    hp[2 * nt] = top ? a[nt][2] : a[nt][0];
    hp[2 * nt + 1] = top ? a[nt][3] : a[nt][1];
  }
  xa[32 * pw + lane] = make_float4(hp[0], hp[1], hp[2], hp[3]);
  xa[128 + 32 * pw + lane] = make_float4(hp[4], hp[5], hp[6], hp[7]);
  asm volatile("bar.sync 3, 128;" ::: "memory");
  const float4 r01 = xa[32 * (pw ^ 2) + lane];
  const float4 r23 = xa[128 + 32 * (pw ^ 2) + lane];
  const float rv[8] = {r01.x, r01.y, r01.z, r01.w, r23.x, r23.y, r23.z, r23.w};
  const int t = 16 * (pw & 1) + gid + (top ? 0 : 8);
  const float* rq = sm + W::RQ + nb * C;
  const float* rk = sm + W::RKA + nb * C;
  const float* rgs = sm + W::RG + nb * C;
  const float* gs = sm + W::GS + nb * C;
  const float r0 = rq[t] * gs[t];  // q's unscaling and G_t
  float x0[8];  // row t, steps 8 nt + 2 tig and + 1: A_ts G_t / G_s, masked
  float m0 = 0.f;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int s = 8 * nt + 2 * tig;
    const float2 c = *reinterpret_cast<const float2*>(rk + s);
    const float2 rg = *reinterpret_cast<const float2*>(rgs + s);
    const float cx = c.x * rg.x, cy = c.y * rg.y;
    // hi part + lo part (rows 0..31 are q hi's)
    const float h0 = top ? kp[2 * nt] : rv[2 * nt], l0 = top ? rv[2 * nt] : kp[2 * nt];
    const float h1 = top ? kp[2 * nt + 1] : rv[2 * nt + 1], l1 = top ? rv[2 * nt + 1] : kp[2 * nt + 1];
    x0[2 * nt] = (s <= t) ? (h0 + l0) * r0 * cx : 0.f;
    x0[2 * nt + 1] = (s + 1 <= t) ? (h1 + l1) * r0 * cy : 0.f;
    m0 = fmaxf(m0, fmaxf(fabsf(x0[2 * nt]), fabsf(x0[2 * nt + 1])));
  }
  m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
  m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
  float s0, i0;
  pow2_scale(m0, s0, i0);
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
  }
  if (tig == 0) sm[W::RA + nb * C + t] = i0;
  wg_proxy_fence();  // A's pieces visible to the consumers' wgmma after the CTA barrier
}

'''
    globals()["src"] = src[:start] + new_amat + src[end:]


def consumer_pipe():
    sub("""__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }""",
        """__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }""")
    sub("""#pragma unroll
        for (int qb = 0; qb < 8 / W::QG; ++qb) {
          uint32_t ah[W::QG][4], al[W::QG][4];
#pragma unroll
          for (int u = 0; u < W::QG; ++u) {
            const int kk = W::QG * qb + u;
            split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, ah[u][0], al[u][0]);
            split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, ah[u][1], al[u][1]);
            split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, ah[u][2], al[u][2]);
            split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ah[u][3], al[u][3]);
          }
          if (qb == 8 / W::QG - 1) wsh_zero(P);
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
            const uint64_t dh = wg_desc_at(bqh, 64 * kk), dl = wg_desc_at(bql, 64 * kk);
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
        }""", """        // Four groups of two k steps, the pieces in two register buffers: group qb's split runs while group qb - 1's
        // wgmma execute; a buffer is rewritten only after its group has completed (wait_group 1).
        uint32_t ah[2][2][4], al[2][2][4];
#pragma unroll
        for (int qb = 0; qb < 4; ++qb) {
          const int bf = qb & 1;
          if (qb >= 2) {
            wg_wait1();
            wg_keep(ah[bf]);
            wg_keep(al[bf]);
          }
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int kk = 2 * qb + u;
            split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, ah[bf][u][0], al[bf][u][0]);
            split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, ah[bf][u][1], al[bf][u][1]);
            split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, ah[bf][u][2], al[bf][u][2]);
            split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ah[bf][u][3], al[bf][u][3]);
          }
          if (qb == 3) wsh_zero(P);
          wg_keep(O);
          wg_keep(ah[bf]);
          wg_keep(al[bf]);
          wg_keep(P);
          wg_keep(wh);
          wg_keep(wl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int kk = 2 * qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc_at(bqh, 64 * kk), dl = wg_desc_at(bql, 64 * kk);
            wh_mma_n32(O, al[bf][u], dh);
            wh_mma_n32(O, ah[bf][u], dl);
            wh_mma_n32(O, ah[bf][u], dh);
          }
          if (qb == 3) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group
          wg_commit();
        }
        wg_wait0();
        wg_keep(O);
        wg_keep(ah[0]);
        wg_keep(al[0]);
        wg_keep(ah[1]);
        wg_keep(al[1]);
        wg_keep(P);
        wg_keep(wh);
        wg_keep(wl);""")


def kt_before_stores():
    """NOT IN ANY FILE THAT RAN: K^T Vt's first column block issued before y's stores and its update beside the second
    block's wgmma. Local compiles spilled 420 bytes on the consumers (the whole product before the stores: 360), with
    the fresh accumulators' zeroing replaced by scale-d false (wh_mma_n64_new) or not; kept for the next try."""
    sub("""      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// A (64 x 32 per warpgroup) += q""", """      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// d = a * b (64 x 64 per warpgroup, as wh_mma_n64 with scale-d false): d's old values are not read, so a fresh
// accumulator needs no zeroing and its registers are taken only here.
__device__ __forceinline__ void wh_mma_n64_new(float (&d)[8][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "{\\n.reg .pred p;\\nsetp.ne.b32 p, %37, 0;\\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\\n}"
      : "=f"(d[0][0]), "=f"(d[0][1]), "=f"(d[0][2]), "=f"(d[0][3]), "=f"(d[1][0]), "=f"(d[1][1]), "=f"(d[1][2]),
        "=f"(d[1][3]), "=f"(d[2][0]), "=f"(d[2][1]), "=f"(d[2][2]), "=f"(d[2][3]), "=f"(d[3][0]), "=f"(d[3][1]),
        "=f"(d[3][2]), "=f"(d[3][3]), "=f"(d[4][0]), "=f"(d[4][1]), "=f"(d[4][2]), "=f"(d[4][3]), "=f"(d[5][0]),
        "=f"(d[5][1]), "=f"(d[5][2]), "=f"(d[5][3]), "=f"(d[6][0]), "=f"(d[6][1]), "=f"(d[6][2]), "=f"(d[6][3]),
        "=f"(d[7][0]), "=f"(d[7][1]), "=f"(d[7][2]), "=f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd), "n"(0));
}

// A (64 x 32 per warpgroup) += q""")
    # K^T Vt: column block 0 issued before y's stores (O and 32 accumulators live, not 64: the whole product there
    # spilled 360 bytes), block 1 after them; block 0's update runs beside block 1's wgmma.
    kt_old = """      // ---- S^T = G_C (S^T + Vt''^T K''): Vt''^T's pieces (the chunk's top) x K''s, 2 k steps x 2 column blocks x 3
      // wgmma m64n64k16 into fresh accumulators, unscaled by row and chunk in the update.
      const uint64_t bkh = wg_desc(sm + W::KH + nb * W::H16, 128, 512);
      const uint64_t bkl = wg_desc(sm + W::KL + nb * W::H16, 128, 512);
      float acc[2][8][4];
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[a][kk][e] = 0.f;
#pragma unroll
      for (int a = 0; a < 2; ++a) wg_keep(acc[a]);
      wg_keep(wh);
      wg_keep(wl);
      wg_fence();
#pragma unroll
      for (int m = 0; m < 2; ++m) {
#pragma unroll
        for (int a = 0; a < 2; ++a) {  // columns 64 a ..: 2048 halves a block; steps 16 m ..: 128 halves a step
          const uint64_t dh = wg_desc_at(bkh, 1024 * a + 64 * m), dl = wg_desc_at(bkl, 1024 * a + 64 * m);
          wh_mma_n64(acc[a], wl[m], dh);
          wh_mma_n64(acc[a], wh[m], dl);
          wh_mma_n64(acc[a], wh[m], dh);
        }
      }
      wg_commit();
      wg_wait0();
#pragma unroll
      for (int a = 0; a < 2; ++a) wg_keep(acc[a]);
      wg_keep(wh);
      wg_keep(wl);
      WSH_MARK(6, ch);
      const float GC = gsc[C - 1];
      const float rkc = sm[W::RK + nb * DP];
      const float f0 = iv0 * rkc, f1 = iv1 * rkc;  // powers of two: exact
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          float* sv = S[8 * a + kk];
          sv[0] = fmaf(acc[a][kk][0], f0, sv[0]) * GC;
          sv[1] = fmaf(acc[a][kk][1], f0, sv[1]) * GC;
          sv[2] = fmaf(acc[a][kk][2], f1, sv[2]) * GC;
          sv[3] = fmaf(acc[a][kk][3], f1, sv[3]) * GC;
        }
"""
    kt_block = """      {  // column block BLK: 2 k steps x 3 wgmma m64n64k16 (steps 16 m ..: 128 halves a step), the first one fresh
        wg_keep(wh);
        wg_keep(wl);
        wg_fence();
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const uint64_t dh = wg_desc_at(bkh, 1024 * BLK + 64 * m), dl = wg_desc_at(bkl, 1024 * BLK + 64 * m);
          if (m == 0)
            wh_mma_n64_new(acc[BLK], wl[m], dh);
          else
            wh_mma_n64(acc[BLK], wl[m], dh);
          wh_mma_n64(acc[BLK], wh[m], dl);
          wh_mma_n64(acc[BLK], wh[m], dh);
        }
        wg_commit();
      }
"""
    upd = """#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        float* sv = S[8 * BLK + kk];
        sv[0] = fmaf(acc[BLK][kk][0], f0, sv[0]) * GC;
        sv[1] = fmaf(acc[BLK][kk][1], f0, sv[1]) * GC;
        sv[2] = fmaf(acc[BLK][kk][2], f1, sv[2]) * GC;
        sv[3] = fmaf(acc[BLK][kk][3], f1, sv[3]) * GC;
      }
"""
    sub(kt_old, kt_block.replace("BLK", "1") + """      const float GC = gsc[C - 1];
      const float rkc = sm[W::RK + nb * DP];
      const float f0 = iv0 * rkc, f1 = iv1 * rkc;  // powers of two: exact
      wg_wait1();  // block 0 done
      wg_keep(acc[0]);
""" + upd.replace("BLK", "0") + """      wg_wait0();
      wg_keep(acc[1]);
      wg_keep(wh);
      wg_keep(wl);
      WSH_MARK(6, ch);
""" + upd.replace("BLK", "1"))
    sub("""      WSH_MARK(2, ch);
      WSH_MARK(3, ch);
      if (n == C) {""", """      WSH_MARK(2, ch);
      // ---- S^T = G_C (S^T + Vt''^T K''): Vt''^T's pieces (the chunk's top) x K''s into fresh accumulators, unscaled
      // by row and chunk in the update; column block 0 issued here unless this is the last chunk (no state after it)
      const bool last = ch + 1 == nchunks;
      const uint64_t bkh = wg_desc(sm + W::KH + nb * W::H16, 128, 512);
      const uint64_t bkl = wg_desc(sm + W::KL + nb * W::H16, 128, 512);
      float acc[2][8][4];
      if (!last)
""" + kt_block.replace("BLK", "0") + """      WSH_MARK(3, ch);
      if (n == C) {""")
    sub("""      if (ch + 1 == nchunks) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      {  // column block 1""", """      if (last) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      {  // column block 1""")


def regs_176_80():
    """The register file split 176 / 88 -> 176 / 80: room on the consumers for K^T Vt in flight beside y's stores."""
    sub("NCW = 8, NBUF = 3, NBQK = 2, REG_C = 168, REG_P = 88, QG = 4;",
        "NCW = 8, NBUF = 3, NBQK = 2, REG_C = 176, REG_P = 80, QG = 4;")


def header(name, what):
    sub("# v67_iter: v64_avt (below)", f"# {name}: v67_iter (below) with {what}.\n# v67_iter: v64_avt (below)")


for name, what, parts in [
        ("v68a_apair", "A from the stacked pieces [q hi; q lo] (16 wgmma, no discarded rows, its post-processing on "
         "four warps)", [prep_pair]),
        ("v68b_cpipe", "Q S0's split pipelined against its wgmma (four groups, two register buffers)",
         [consumer_pipe]),
        ("v68c_both", "v68a_apair's A and v68b_cpipe's consumer pipelining", [prep_pair, consumer_pipe]),
        ("v68d_qlayout", "q's hi and lo pieces adjacent by chunk (v68a_apair's layout) and nothing else",
         [q_layout]),
        ("v68e_kty", "v68c_both's changes, K^T Vt's first column block issued before y's stores, and the registers "
         "split 176 / 80", [prep_pair, consumer_pipe, kt_before_stores, regs_176_80])]:
    src = base
    header(name, what)
    for p in parts:
        p()
    ver = name.split("_")[0]  # the extension's and its entry point's names (probe63 expects sgd_<ver>_forward)
    sub('name="sgd_v67_iter"', f'name="sgd_{name}"')
    sub("sgd_v67_forward", f"sgd_{ver}_forward", count=4)
    (ROOT / f".gpu/{name}.py").write_text(src)
    print("wrote", name)
