"""Write .gpu/v73_tfqs.py from .gpu/v69_sacc.py (session 32; make_v74.py writes it).

v69's consumers split their state into fp16 pieces every chunk for Q S0: row maxima, a power-of-two scale a row,
then hi = fp16(x), lo = fp16(x - hi): ~320 instructions a consumer thread a chunk. v72 moved Q S0 (and A) to bf16
pieces: ~192, 6% off the chunk, but bf16's 8-bit pieces put it past the precision margin.

v73 runs Q S0 on 3xTF32 instead, with the state itself as the hi piece. wgmma reads a .tf32 operand's 32 bits and
truncates the low 13, so R (K^T Vt's fp32 accumulator) is its own hi piece; lo = R - trunc(R) (LOP3 + FADD, exact)
is the only split left: 128 instructions a consumer thread, no maxima, no scale (tf32 keeps fp32's exponent range).
For that the accumulator's column order must be a TF32 A fragment's k order (tig, tig + 4): K^T Vt's K'' is
stored with state column i at position wg_np(i), so R's register (j, 2 tig) holds column tig of each 8 and
(j, 2 tig + 1) column tig + 4. Q S0's B operand is q in tf32 pieces: its hi piece is the raw q tile as TMA wrote it
(128-byte swizzle, K-major: wgmma reads it with a swizzled descriptor), its lo piece q - trunc(q), written by the
prep warps beside their fp16 split of q for A, in the same layout.

The consumers now read raw q during chunk c, so q takes three TMA buffers (k keeps two). v goes to two buffers to
pay for it: the consumers finish reading chunk c's v tile at their chunk's top (the Vt'' split), so chunk c+2's v
is issued then by consumer thread 0 (named barrier 4, the other consumer warps arriving) on mbarriers of its own;
the prep warps wait for chunk c+1's v before the CTA barrier. A = Q K^T stays v69's (fp16 pieces, now one chunk's
buffer: the safe path reads raw q and a fp32 copy of k, which the prep writes in place of K'' on a safe chunk).

Precision: hi = trunc(x) and lo = trunc(x - trunc(x)) hold x to below 2^-20 |x| (truncation, one-signed), the
dropped lo lo term is below 2^-20 of a product: Q S0 to ~2^-21 of sum |q_i R_i|, as fp16's pieces under a row
scale (~2^-22 at the row's largest element, less below it). So about v69's error, not v72's.

The drop decision and the combine are v72's: a bound per row (|R_new| <= |R'| + 2^36) with the exact maxima taken
only where the bound allows a drop, and Q S0 = (Q R) lam 2^le with the factor in two halves."""
from pathlib import Path

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())
src = (ROOT / ".gpu/v69_sacc.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v69_sacc: v68c_both (below)",
    "# v73_tfqs: v69_sacc (below) with Q S0 on 3xTF32: the state is its own hi piece (wgmma truncates a tf32\n"
    "# operand), the raw q tile Q S0's hi B operand (three q buffers, two v buffers, v issued by the consumers).\n"
    "# v69_sacc: v68c_both (below)")

# ---- shared memory
sub("""  static constexpr int NCW = 8, NBUF = 3, NBQK = 2, REG_C = 168, REG_P = 88, QG = 4;""",
    """  static constexpr int NCW = 8, NBUF = 3, NBQ = 3, NBK = 2, NBV = 2, REG_C = 168, REG_P = 88, QG = 4;""")
sub("""  static constexpr int QT = 0, KT = TILE, QKBUF = 2 * TILE;  // raw q, k: NBQK buffers
  static constexpr int VB = NBQK * QKBUF;           // raw v: NBUF tiles
  static constexpr int GB = VB + NBUF * TILE;       // gate[C], beta[C]: NBUF buffers""",
    """  static constexpr int QR = 0;                      // raw q: NBQ tiles (chunk c's is Q S0's hi piece)
  static constexpr int KR = QR + NBQ * TILE;        // raw k: NBK tiles
  static constexpr int VB = KR + NBK * TILE;        // raw v: NBV tiles
  static constexpr int QLO = VB + NBV * TILE;       // q - trunc_tf32(q), raw q's layout, 2 chunks
  static constexpr int GB = QLO + 2 * TILE;         // gate[C], beta[C]: NBUF buffers""")
sub("""  static constexpr int QH = GB + NBUF * GBUF;       // q hi then q lo (wsh_qoff by step) of chunk 0, then of 1
  static constexpr int QL = QH + 2 * H16;           // (the end of chunk 0's pieces)
  static constexpr int KAH = QL + 2 * H16;          // k hi (wsh_qoff by step), 2 chunks, for A
  static constexpr int KAL = KAH + 2 * H16;         // k lo, for A
  static constexpr int KH = KAL + 2 * H16;          // k hi (wsh_koff by state column), 2 chunks, for K^T Vt
  static constexpr int KL = KH + 2 * H16;           // k lo, for K^T Vt
  static constexpr int RQ = KL + 2 * H16;           // 1 / (q's scale) by step t, 2 chunks""",
    """  static constexpr int QH = GB + NBUF * GBUF;       // q hi then q lo (wsh_qoff by step), one chunk, for A
  static constexpr int QL = QH + H16;
  static constexpr int KAH = QL + H16;              // k hi (wsh_qoff by step), one chunk, for A
  static constexpr int KAL = KAH + H16;             // k lo, for A
  static constexpr int KB = KAL + H16;              // K'' hi then lo (wsh_koff, state column i at wg_np(i)) of chunk 0,
                                                    // then of 1; on a safe chunk k in fp32 ([t][i]) instead
  static constexpr int RQ = KB + 4 * H16;           // 1 / (q's scale) by step t, 2 chunks""")
sub("""  static constexpr int MB = XA + 1024;              // NBUF mbarriers (8 bytes each), a chunk's TMA each
  static constexpr int TOTAL = MB + 2 * NBUF;""",
    """  static constexpr int MB = XA + 1024;              // NBUF mbarriers (8 bytes each) for q / k, then NBV for v
  static constexpr int TOTAL = MB + 2 * (NBUF + NBV);""")
sub("""  static_assert((TILE * 4) % 1024 == 0, "tiles 1024-byte aligned (the swizzle's period)");""",
    """  static_assert((TILE * 4) % 1024 == 0 && (QLO * 4) % 1024 == 0, "tiles 1024-byte aligned (the swizzle's period)");""")

# ---- TMA: q / k by the prep's issuer, v by a consumer thread on mbarriers of its own
sub("""// Chunk ca's q, k (buffer ca % NBQK) and v (buffer ca % NBUF) by 12 TMA boxes on mbarrier ca % NBUF; rows past T
// arrive as zeros. One thread.
__device__ __forceinline__ void wsh_tma_chunk(float* sm, const CUtensorMap* tq, const CUtensorMap* tk,
                                              const CUtensorMap* tv, int ca, int b, int h) {
  using W = WshCfg;
  uint64_t* m = reinterpret_cast<uint64_t*>(sm + W::MB) + ca % W::NBUF;
  float* qd = sm + (ca % W::NBQK) * W::QKBUF + W::QT;
  float* kd = sm + (ca % W::NBQK) * W::QKBUF + W::KT;
  float* vd = sm + W::VB + (ca % W::NBUF) * W::TILE;
  wg_proxy_fence();  // this thread's view: the buffers' earlier generic reads (ordered by the CTA barrier) first
  mbar_expect_tx(m, 3 * W::TILE * 4);
  const int t0 = ca * W::C;
#pragma unroll
  for (int cb = 0; cb < 4; ++cb) {
    tma_box(qd + cb * 1024, tq, 32 * cb, h, t0, b, m);
    tma_box(kd + cb * 1024, tk, 32 * cb, h, t0, b, m);
    tma_box(vd + cb * 1024, tv, 32 * cb, h, t0, b, m);
  }
}
__device__ __forceinline__ void wsh_wait_chunk(float* sm, int c) {
  using W = WshCfg;
  mbar_wait(reinterpret_cast<uint64_t*>(sm + W::MB) + c % W::NBUF, (uint32_t)(c / W::NBUF) & 1u);
}""", """// Chunk ca's q (buffer ca % NBQ) and k (buffer ca % NBK) by 8 TMA boxes on mbarrier ca % NBUF; rows past T
// arrive as zeros. One thread.
__device__ __forceinline__ void wsh_tma_chunk(float* sm, const CUtensorMap* tq, const CUtensorMap* tk, int ca, int b,
                                              int h) {
  using W = WshCfg;
  uint64_t* m = reinterpret_cast<uint64_t*>(sm + W::MB) + ca % W::NBUF;
  float* qd = sm + W::QR + (ca % W::NBQ) * W::TILE;
  float* kd = sm + W::KR + (ca % W::NBK) * W::TILE;
  wg_proxy_fence();  // this thread's view: the buffers' earlier generic reads (ordered by the CTA barrier) first
  mbar_expect_tx(m, 2 * W::TILE * 4);
  const int t0 = ca * W::C;
#pragma unroll
  for (int cb = 0; cb < 4; ++cb) {
    tma_box(qd + cb * 1024, tq, 32 * cb, h, t0, b, m);
    tma_box(kd + cb * 1024, tk, 32 * cb, h, t0, b, m);
  }
}
// Chunk ca's v (buffer ca % NBV) by 4 TMA boxes on v's mbarrier ca % NBV. One thread.
__device__ __forceinline__ void wsh_tma_v(float* sm, const CUtensorMap* tv, int ca, int b, int h) {
  using W = WshCfg;
  uint64_t* m = reinterpret_cast<uint64_t*>(sm + W::MB) + W::NBUF + ca % W::NBV;
  float* vd = sm + W::VB + (ca % W::NBV) * W::TILE;
  wg_proxy_fence();  // the buffer's generic reads (ordered by the barrier before this) first
  mbar_expect_tx(m, W::TILE * 4);
  const int t0 = ca * W::C;
#pragma unroll
  for (int cb = 0; cb < 4; ++cb) tma_box(vd + cb * 1024, tv, 32 * cb, h, t0, b, m);
}
__device__ __forceinline__ void wsh_wait_chunk(float* sm, int c) {
  using W = WshCfg;
  mbar_wait(reinterpret_cast<uint64_t*>(sm + W::MB) + c % W::NBUF, (uint32_t)(c / W::NBUF) & 1u);
}
__device__ __forceinline__ void wsh_wait_v(float* sm, int c) {
  using W = WshCfg;
  mbar_wait(reinterpret_cast<uint64_t*>(sm + W::MB) + W::NBUF + c % W::NBV, (uint32_t)(c / W::NBV) & 1u);
}
// The consumers are done with chunk c's v tile: warps 1-7 arrive at named barrier 4, warp 0 waits there and its
// lane 0 issues chunk c + 2's v into the same buffer.
__device__ __forceinline__ void wsh_release_v(float* sm, const CUtensorMap* tv, int c, int b, int h, int warp,
                                              int lane) {
  if (warp == 0) {
    asm volatile("bar.sync 4, 256;" ::: "memory");
    if (lane == 0) wsh_tma_v(sm, tv, c + 2, b, h);
  } else {
    asm volatile("bar.arrive 4, 256;" ::: "memory");
  }
}""")

# ---- tf32 pieces and Q S0's B descriptors
sub("""// s = 2^(14 - e) for m in [2^e, 2^(e+1)), so |x| <= m scales below 2^15; inv = 1 / s. Both normal floats for any m.""",
    """// x - trunc_tf32(x), exact: with x itself (wgmma truncates a tf32 operand's low 13 bits) the pieces of 3xTF32.
__device__ __forceinline__ float tf32_lo(float x) { return x - __uint_as_float(__float_as_uint(x) & 0xffffe000u); }

// Descriptor of a K-major operand in TMA's 128-byte swizzle (8 rows of 128 bytes, 1024 bytes apart along M / N).
// Within a 1024-byte aligned atom a k step of 8 tf32 advances the start by 32 bytes (wg_desc_at).
__device__ __forceinline__ uint64_t wsh_desc_sw128(const float* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

// s = 2^(14 - e) for m in [2^e, 2^(e+1)), so |x| <= m scales below 2^15; inv = 1 / s. Both normal floats for any m.""")

# ---- A on the prep: one chunk's pieces
sub("""  const float* qp = sm + W::QH + 2 * nb * W::H16;
  const float* kh = sm + W::KAH + nb * W::H16;
  const float* kl = sm + W::KAL + nb * W::H16;""", """  const float* qp = sm + W::QH;
  const float* kh = sm + W::KAH;
  const float* kl = sm + W::KAL;""")

# ---- the prep's split by step: q also into its tf32 lo piece
sub("""// Returns the block's largest |value| (all lanes) when WMAX.
template <bool WMAX>
__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane,
                                             float rg = 1.f) {""", """// Returns the block's largest |value| (all lanes) when WMAX. With xlo, also x - trunc_tf32(x) in xr's layout.
template <bool WMAX>
__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane,
                                             float rg = 1.f, float* xlo = nullptr) {""")
sub("""    const int o = wsh_qoff(t, 4 * (g + 4 * u)) >> 1;
    *reinterpret_cast<uint2*>(qh + o) = make_uint2(h0, h1);
    *reinterpret_cast<uint2*>(ql + o) = make_uint2(l0, l1);
  }""", """    const int o = wsh_qoff(t, 4 * (g + 4 * u)) >> 1;
    *reinterpret_cast<uint2*>(qh + o) = make_uint2(h0, h1);
    *reinterpret_cast<uint2*>(ql + o) = make_uint2(l0, l1);
    if (xlo != nullptr)
      *reinterpret_cast<float4*>(xlo + wsh_toff(t, 4 * (g + 4 * u))) =
          make_float4(tf32_lo(x[u].x), tf32_lo(x[u].y), tf32_lo(x[u].z), tf32_lo(x[u].w));
  }""")
# K'': state column i at position wg_np(i)
sub("""// k / G_s's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps: box g) into K hi / lo under
// the chunk's scale sc (rg: 1 / G_s by step).""", """// k / G_s's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps: box g) into K hi / lo under
// the chunk's scale sc (rg: 1 / G_s by step), column i at position wg_np(i): the consumers' state then holds a TF32
// A fragment's k order.""")
sub("""    const int o = wsh_koff(8 * b8, i) >> 1;
    *reinterpret_cast<uint4*>(kh + o) = make_uint4(h0, h1, h2, h3);""", """    const int o = wsh_koff(8 * b8, wg_np(i)) >> 1;
    *reinterpret_cast<uint4*>(kh + o) = make_uint4(h0, h1, h2, h3);""")
sub("""// Prep warps (pw 0..7): the gate scan (each warp);""", """// k's state columns 32 g .. 32 g + 31 in fp32, [t][i], for the consumers' safe path (one warp, a column a lane).
__device__ __forceinline__ void wsh_copy_k(const float* kr, float* kf, int g, int lane) {
  const int i = 32 * g + lane;
#pragma unroll 8
  for (int s = 0; s < 32; ++s) kf[s * WshCfg::DP + i] = kr[wsh_toff(s, i)];
}

// Prep warps (pw 0..7): the gate scan (each warp);""")
sub("""  const float* qt = sm + (c % W::NBQK) * W::QKBUF + W::QT;
  const float* kt = sm + (c % W::NBQK) * W::QKBUF + W::KT;""", """  const float* qt = sm + W::QR + (c % W::NBQ) * W::TILE;
  const float* kt = sm + W::KR + (c % W::NBK) * W::TILE;""")
sub("""    wsh_split_q<false>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16),
                       reinterpret_cast<uint32_t*>(sm + W::QH + (2 * nb + 1) * W::H16), sm + W::RQ + nb * C, pw, lane);""",
    """    wsh_split_q<false>(qt, reinterpret_cast<uint32_t*>(sm + W::QH), reinterpret_cast<uint32_t*>(sm + W::QL),
                       sm + W::RQ + nb * C, pw, lane, 1.f, sm + W::QLO + nb * W::TILE);""")
sub("""    const float m = wsh_split_q<true>(kt, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                                      reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C,""",
    """    const float m = wsh_split_q<true>(kt, reinterpret_cast<uint32_t*>(sm + W::KAH),
                                      reinterpret_cast<uint32_t*>(sm + W::KAL), sm + W::RKA + nb * C,""")
sub("""    wsh_split_k(kt, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);""",
    """    if (safe)
      wsh_copy_k(kt, sm + W::KB + 2 * nb * W::H16, pw - 4, lane);
    else
      wsh_split_k(kt, reinterpret_cast<uint32_t*>(sm + W::KB + 2 * nb * W::H16),
                  reinterpret_cast<uint32_t*>(sm + W::KB + (2 * nb + 1) * W::H16), ksc, sm + W::RG + nb * C, pw - 4,
                  lane);""")

# ---- the prep's loop: q / k by its issuer, v waited for before the CTA barrier
sub("""        wsh_tma_chunk(sm, &tq, &tk, &tv, 0, b, h);
        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);""", """        wsh_tma_chunk(sm, &tq, &tk, 0, b, h);
        wsh_tma_v(sm, &tv, 0, b, h);
        if (1 < nchunks) {
          wsh_tma_chunk(sm, &tq, &tk, 1, b, h);
          wsh_tma_v(sm, &tv, 1, b, h);
        }""")
sub("""    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    cta_sync();""", """    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    wsh_wait_v(sm, 0);  // the consumers read chunk 0's v after the CTA barrier
    cta_sync();""")
sub("""          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);""",
    """          // chunk c + 2: q into chunk c - 1's buffer (read by the consumers during chunk c - 1), k into chunk c's
          // (split during chunk c - 1); v by the consumers
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, ch + 2, b, h);""")
sub("""        if (issuer && ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
      }""", """        if (issuer && ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
        wsh_wait_v(sm, ch + 1);  // issued by the consumers during chunk c - 1
      }""")

# ---- consumers
sub("  float lam0 = 1.f, lam1 = 1.f;  // rows j0, j0 + 8: S = lam 2^le R, R held in S[][][]\n",
    "  float lam0 = 1.f, lam1 = 1.f;  // rows j0, j0 + 8: S = lam 2^le R, R held in S[][][]\n"
    "  float br0 = 0.f, br1 = 0.f;  // bounds on the rows' largest |R|\n")
sub("""  // R in the wgmma accumulator layout: tile n (S[n >> 3][n & 7]) holds (j0, i), (j0, i + 1), (j0 + 8, i), (j0 + 8, i + 1), i = 8 n + 2 tig.""",
    """  // R in the wgmma accumulator layout: tile n (S[n >> 3][n & 7]) holds (j0, i), (j0, i + 4), (j0 + 8, i), (j0 + 8, i + 4),
  // i = 8 n + tig (K'''s columns at wg_np's positions): registers 0, 2, 1, 3 are k step n's TF32 A fragment.""")
sub("""    const float* vsm = sm + W::VB + (ch % W::NBUF) * W::TILE;""",
    """    const float* vsm = sm + W::VB + (ch % W::NBV) * W::TILE;
    const bool vnext = ch + 2 < nchunks;  // chunk c + 2's v issued once this chunk's tile is read""")
sub("""      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, vo, tig);
""", """      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, vo, tig);
      if (vnext && warp != 0) asm volatile("bar.arrive 4, 256;" ::: "memory");  // warp 0 releases it under Q S0
""")
old_qs0 = src[src.index("      float mr0 = 0.f, mr1 = 0.f;  // the rows' largest |S| / 2^le (chunk 0: S is zero)"):
              src.index("      } else {  // chunk 0: S is zero, A Vt alone")]
sub(old_qs0, """      float mr0 = br0 * lam0, mr1 = br1 * lam1;  // bounds on the rows' largest |S| / 2^le (chunk 0: S is zero)
      if (ch > 0) {  // chunk 0: S is zero
        // ---- O^T = S^T Q^T on 3xTF32: 16 k steps x 3 wgmma m64n32k8 in four groups; R is the hi piece (registers
        // 0, 2, 1, 3 of tile kk), its lo pieces in two register buffers of four steps (a buffer is rewritten only
        // after its group completed: wait_group 1); q's hi piece the raw tile, its lo piece the prep's.
        const uint64_t bqh = wsh_desc_sw128(sm + W::QR + (ch % W::NBQ) * W::TILE);
        const uint64_t bql = wsh_desc_sw128(sm + W::QLO + nb * W::TILE);
        uint32_t rl[2][4][4];
#pragma unroll
        for (int qb = 0; qb < 4; ++qb) {
          const int bf = qb & 1;
          if (qb >= 2) {
            wg_wait1();
            wg_keep(rl[bf]);
          }
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int kk = 4 * qb + u;
            rl[bf][u][0] = __float_as_uint(tf32_lo(S[kk >> 3][kk & 7][0]));
            rl[bf][u][1] = __float_as_uint(tf32_lo(S[kk >> 3][kk & 7][2]));
            rl[bf][u][2] = __float_as_uint(tf32_lo(S[kk >> 3][kk & 7][1]));
            rl[bf][u][3] = __float_as_uint(tf32_lo(S[kk >> 3][kk & 7][3]));
          }
          if (qb == 3) wsh_zero(P);
          wg_keep(O);
          wg_keep(rl[bf]);
          wg_keep(S[0]);
          wg_keep(S[1]);
          wg_keep(P);
          wg_keep(wh);
          wg_keep(wl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int kk = 4 * qb + u;  // columns 8 kk ..: box qb, 32 bytes a step within its rows
            const uint32_t rh[4] = {__float_as_uint(S[kk >> 3][kk & 7][0]), __float_as_uint(S[kk >> 3][kk & 7][2]),
                                    __float_as_uint(S[kk >> 3][kk & 7][1]), __float_as_uint(S[kk >> 3][kk & 7][3])};
            const uint64_t dh = wg_desc_at(bqh, 1024 * qb + 8 * u), dl = wg_desc_at(bql, 1024 * qb + 8 * u);
            wg_mma_n32(O, rl[bf][u], dh);
            wg_mma_n32(O, rh, dl);
            wg_mma_n32(O, rh, dh);
          }
          if (qb == 3) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group
          wg_commit();
        }
        if (vnext && warp == 0) wsh_release_v(sm, &tv, ch, b, h, warp, lane);  // under the wgmma
        wg_wait0();
        wg_keep(O);
        wg_keep(rl[0]);
        wg_keep(rl[1]);
        wg_keep(S[0]);
        wg_keep(S[1]);
        wg_keep(P);
        wg_keep(wh);
        wg_keep(wl);
        // y_t = G_t (Q S0)_t + (A' Vt'')_t, Q S0 = (Q R) lam 2^le: the factor in two halves, each a normal float
        // while lam 2^le is above 2^-252 (below it, (Q R) lam 2^le is below the float range)
        const int ex0 = exp_of(lam0) + le0, ex1 = exp_of(lam1) + le1;
        const float fa0 = ldexp_sat(lam0, le0 - ex0 / 2), fb0 = ldexp_sat(1.f, ex0 / 2);
        const float fa1 = ldexp_sat(lam1, le1 - ex1 / 2), fb1 = ldexp_sat(1.f, ex1 / 2);
        const float* ra = sm + W::RA + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 p = *reinterpret_cast<const float2*>(ra + 8 * nt + 2 * tig);
          O[nt][0] = fmaf(P[nt][0], iv0 * p.x, O[nt][0] * fa0 * (fb0 * gy[nt][0]));
          O[nt][1] = fmaf(P[nt][1], iv0 * p.y, O[nt][1] * fa0 * (fb0 * gy[nt][1]));
          O[nt][2] = fmaf(P[nt][2], iv1 * p.x, O[nt][2] * fa1 * (fb1 * gy[nt][0]));
          O[nt][3] = fmaf(P[nt][3], iv1 * p.y, O[nt][3] * fa1 * (fb1 * gy[nt][1]));
        }
""")
sub("""        wsh_avt(P, wh, wl, aph, apl);
        wg_commit();
        wg_wait0();
        wg_keep(P);""", """        wsh_avt(P, wh, wl, aph, apl);
        wg_commit();
        if (vnext && warp == 0) wsh_release_v(sm, &tv, ch, b, h, warp, lane);
        wg_wait0();
        wg_keep(P);""")
# the drop: decided on the exact maxima whenever the bound allows one (v72)
sub("""        const int em0 = exp_of(mr0), em1 = exp_of(mr1);
        const bool drop0""", """        if (__any_sync(kFull, (mr0 > 0.f && exp_of(mr0) + d0 > 100) || (mr1 > 0.f && exp_of(mr1) + d1 > 100))) {
          float m0 = 0.f, m1 = 0.f;  // v69's maxima: R is unchanged since Q S0
#pragma unroll
          for (int i = 0; i < 16; ++i) {
            m0 = fmaxf(m0, fmaxf(fabsf(S[(i) >> 3][(i) & 7][0]), fabsf(S[(i) >> 3][(i) & 7][1])));
            m1 = fmaxf(m1, fmaxf(fabsf(S[(i) >> 3][(i) & 7][2]), fabsf(S[(i) >> 3][(i) & 7][3])));
          }
          m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
          m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
          m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
          m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
          mr0 = m0 * lam0;
          mr1 = m1 * lam1;
        }
        const int em0 = exp_of(mr0), em1 = exp_of(mr1);
        const bool drop0""")
sub("""        const float g0 = ldexp_sat(lam0, d0), g1 = ldexp_sat(lam1, d1);
""", """        const float g0 = ldexp_sat(lam0, d0), g1 = ldexp_sat(lam1, d1);
        // |R_new| <= |R'| + |Vt''^T K''| (32 products of pieces below 2^15: 2^35, 2^36 with the lo terms' margin)
        br0 = (mr0 > 0.f ? ldexp_sat(mr0, d0) : 0.f) + (drop0 ? 0.f : 68719476736.f);
        br1 = (mr1 > 0.f ? ldexp_sat(mr1, d1) : 0.f) + (drop1 ? 0.f : 68719476736.f);
""")
sub("""        const uint64_t bkh = wg_desc(sm + W::KH + nb * W::H16, 128, 512);
        const uint64_t bkl = wg_desc(sm + W::KL + nb * W::H16, 128, 512);""",
    """        const uint64_t bkh = wg_desc(sm + W::KB + 2 * nb * W::H16, 128, 512);
        const uint64_t bkl = wg_desc(sm + W::KB + (2 * nb + 1) * W::H16, 128, 512);""")
# the safe path: raw q and the prep's fp32 copy of k, at the state's column order
sub("""      const __half* qph = reinterpret_cast<const __half*>(sm + W::QH + 2 * nb * W::H16);
      const __half* qpl = reinterpret_cast<const __half*>(sm + W::QH + (2 * nb + 1) * W::H16);
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAL + nb * W::H16);
      const float* rq = sm + W::RQ + nb * C;
      const float* rka = sm + W::RKA + nb * C;
""", """      br0 = br1 = 3.0e38f;  // R = S after this chunk: the next drop check takes the exact maxima
      const float* qr = sm + W::QR + (ch % W::NBQ) * W::TILE;
      const float* kf = sm + W::KB + 2 * nb * W::H16;
""")
sub("""          const int i = 8 * i8 + 2 * tig;
          const int o = wsh_qoff(t, i);  // even: a pair of halves
          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + o));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + o));
          const float2 ka = __half22float2(*reinterpret_cast<const __half2*>(kph + o));
          const float2 kb = __half22float2(*reinterpret_cast<const __half2*>(kpl + o));
          const float2 qx = make_float2((qa.x + qb.x) * rq[t], (qa.y + qb.y) * rq[t]);
          const float2 kx = make_float2((ka.x + kb.x) * rka[t], (ka.y + kb.y) * rka[t]);""",
    """          const int i = 8 * i8 + tig;  // the state's columns i and i + 4 (registers 0 / 2 and 1 / 3)
          const float2 qx = make_float2(qr[wsh_toff(t, i)], qr[wsh_toff(t, i + 4)]);
          const float2 kx = make_float2(kf[t * DP + i], kf[t * DP + i + 4]);""")
sub("""    WSH_MARK(5, ch + 1);
    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}""", """    if (sfl[nb] && vnext) wsh_release_v(sm, &tv, ch, b, h, warp, lane);  // the safe path read v throughout
    WSH_MARK(5, ch + 1);
    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}""")
sub("Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits), on S",
    "Safe path: the plain fp32 recurrence on q and k (raw q, the prep's fp32 copy of k), on S")

sub("""    for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);""",
    """    for (int i = 0; i < W::NBUF + W::NBV; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);""")

# names
sub("sgd_v69_forward", "sgd_v73_forward", count=src.count("sgd_v69_forward"))
sub('name="sgd_v69_sacc",', 'name="sgd_v73_tfqs",')
assert "v69_sacc\"" not in src
out = ROOT / ".gpu/v73_tfqs.py"
out.parent.mkdir(exist_ok=True)
out.write_text(src)
print("wrote", out)
