
// ---------------------------------------------------------------------------------------------
// v27 -> v32: gd_wg_kernel's arithmetic at D = DP (64 or 128; aligned, full width) on warps in two roles. The first
// DP / 16 warps (DP / 64 consumer warpgroups) each own a 64 x DP block of S^T; they run chunk c's Q S0 and K^T Vt on
// wgmma and A Vt on mma.sync, and write y(c) from registers. The prep warps split and scan chunk c+1, vote, and
// build its A tiles; the last NLW warps issue chunk c+2's cp.async. One CTA barrier per chunk hands a prepared
// chunk over. Three input buffers (q hi in place, K^T hi over the k rows once they are read); double buffers for
// q lo, K^T lo, A, G, beta/G, safe flag. DP = 128: 8 consumer warps, 7 prep warps; DP = 64: 4 consumer warps,
// 11 prep warps; one load warp. The register split (setmaxnreg) and y's path are per DP below.
template <int DP>
struct WsgCfg {
  static constexpr int C = 32, DPS = DP + 8, NCS = DP + 8, CS = 36;
  static constexpr int NCW = DP / 16;               // consumer warps
  static constexpr int NLW = 1;                     // load warps, the last ones
  static constexpr int REG_C = DP == 128 ? 168 : 0;  // consumer / producer registers by setmaxnreg (0: no split)
  static constexpr int REG_P = DP == 128 ? 88 : 0;
  // y(c) staged in shared memory by the consumers and stored by the prep warps at the start of chunk c+1, while
  // they wait for its inputs: a warp's global stores run at ~3-4 bytes a cycle, so they need many warps.
  // DP = 128 has no room for the rows.
  static constexpr bool YLW = DP == 64;
  static constexpr int YSS = DP + 4;                 // staging row stride (16-byte aligned rows, no bank conflicts)
  static constexpr int NPW = 16 - NCW - NLW;        // prep warps
  static constexpr int NP = 32 * NPW;               // prep threads (named barrier 1)
  static constexpr int NPROD = 32 * (NPW + NLW);    // prep and load threads (named barrier 2)
  static constexpr int QB = 0;                      // q blocked (wsg_qoff), hi in place after the split
  static constexpr int KR = QB + C * DP;            // k rows [t][DPS]; K^T hi (wg_ktoff) over them after the split
  static constexpr int VR = KR + C * DPS;           // v rows [t][NCS]
  static constexpr int GR = VR + C * NCS;           // gate[C]
  static constexpr int BR = GR + C;                 // beta[C]
  static constexpr int BUF = BR + C;
  static constexpr int QL = 3 * BUF;                // q lo, 2 chunks
  static constexpr int KTL = QL + 2 * C * DP;       // K^T lo, 2 chunks
  static constexpr int AM = KTL + 2 * C * DP;       // A (its k halves summed), 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks
  static constexpr int CF = GS + 2 * C;             // beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks
  static constexpr int YS = SF + 4;                  // y(c) rows [t][YSS], 2 chunks, when YLW
  static constexpr int TOTAL = YS + (YLW ? 2 * C * YSS : 0);
  static_assert(YS % 4 == 0 && YSS % 4 == 0, "16-byte aligned staging rows");
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert(DP == 64 || DP == 128, "one or two consumer warpgroups");
  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0, "16-byte aligned");
  static_assert(C * DP <= C * DPS, "K^T hi fits over the k rows");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
};

// Offset (floats) in q's blocked layout: core matrices of 8 steps x 4 columns, 128 B apart along d, 32 DP B along t.
template <int DP>
__device__ __forceinline__ int wsg_qoff(int t, int d) {
  return (t >> 3) * (8 * DP) + (d >> 2) * 32 + (t & 7) * 4 + (d & 3);
}

__device__ __forceinline__ void cta_sync() { asm volatile("bar.sync 0;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void prep_sync() { asm volatile("bar.sync 1, %0;" ::"n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ void producer_sync() { asm volatile("bar.sync 2, %0;" ::"n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ int prep_vote(int pred) {
  int r;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.s32 p, %1, 0;\n bar.red.or.pred q, 1, %2, p;\n selp.s32 %0, 1, 0, q;\n}"
      : "=r"(r)
      : "r"(pred), "n"(N)
      : "memory");
  return r;
}

// One chunk's inputs (D == DP, 16-byte aligned) by cp.async on the load warps (thread lt of NL): q into its blocked
// layout, k and v rows, gate and beta. The caller commits the group.
template <int DP>
__device__ __forceinline__ void wsg_load(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                         const float* __restrict__ v, const float* __restrict__ gate,
                                         const float* __restrict__ beta, int b, int h, int T, int H, int t0, int n,
                                         int lt) {
  using W = WsgCfg<DP>;
  constexpr int NL = 32 * W::NLW, R4 = DP / 4;  // float4 columns a row
  static_assert(NL % R4 == 0, "whole rows a pass");
  const long long rs = (long long)H * DP;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * DP;
  if (n == W::C) {
#pragma unroll 4
    for (int it = 0; it < W::C * R4 / NL; ++it) {
      const int idx = lt + it * NL;
      // q: 8 consecutive lanes take 8 rows of one 16-byte column, so their stores fill distinct banks.
      const int t8 = idx & 7, e = (idx >> 3) & (R4 - 1), tb = (unsigned)idx / (8 * R4);
      __pipeline_memcpy_async(buf + W::QB + tb * (8 * DP) + e * 32 + t8 * 4, q + base + (8 * tb + t8) * rs + 4 * e,
                              16);
      const int t = it * (NL / R4) + (unsigned)lt / R4, c4 = lt & (R4 - 1);  // NL is a multiple of R4
      const long long o = base + t * rs + 4 * c4;
      __pipeline_memcpy_async(buf + W::KR + t * W::DPS + 4 * c4, k + o, 16);
      __pipeline_memcpy_async(buf + W::VR + t * W::NCS + 4 * c4, v + o, 16);
    }
  } else {
    for (int idx = lt; idx < n * R4; idx += NL) {
      const int t = (unsigned)idx / R4, c4 = idx & (R4 - 1);
      const long long o = base + t * rs + 4 * c4;
      __pipeline_memcpy_async(buf + W::QB + wsg_qoff<DP>(t, 4 * c4), q + o, 16);
      __pipeline_memcpy_async(buf + W::KR + t * W::DPS + 4 * c4, k + o, 16);
      __pipeline_memcpy_async(buf + W::VR + t * W::NCS + 4 * c4, v + o, 16);
    }
  }
  if (lt < n) {
    const long long o = ((long long)b * T + t0 + lt) * H + h;
    __pipeline_memcpy_async(buf + W::GR + lt, gate + o, 4);
    __pipeline_memcpy_async(buf + W::BR + lt, beta + o, 4);
  }
}

// A = causal(Q K^T) of chunk c: tile (mtA, ns) = item w (0..5), ns <= 2 mtA + 1, each 64-column k half in turn
// (mma.sync; k position tig is column d, tig + 4 is d + 4), the halves summed in gd_wg_kernel's order.
template <int DP>
__device__ __forceinline__ void wsg_atile(float* sm, int c, int w, int gid, int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, CS = W::CS, NH = DP / 64;
  const float* buf = sm + (c % 3) * W::BUF;
  const int nb = c & 1;
  const float* qs = buf + W::QB;
  const float* ql = sm + W::QL + nb * C * DP;
  const float* kth = buf + W::KR;
  const float* ktl = sm + W::KTL + nb * C * DP;
  const int mtA = w < 2 ? 0 : 1;
  const int ns = w < 2 ? w : w - 2;
  const int ta = 16 * mtA + gid;
  const int sb = 8 * ns + gid;
  float accs[NH][4];
#pragma unroll
  for (int half = 0; half < NH; ++half) {
    float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const int d = half * 64 + 8 * kk + tig;
      const int oa = wsg_qoff<DP>(ta, d), oa4 = oa + 32, ob8 = wsg_qoff<DP>(ta + 8, d), ob84 = ob8 + 32;
      const int k0 = wg_ktoff(wg_np(d), sb), k1 = k0 + 4;  // np(d + 4) = np(d) + 1
      const uint32_t ah[4] = {__float_as_uint(qs[oa]), __float_as_uint(qs[ob8]), __float_as_uint(qs[oa4]),
                              __float_as_uint(qs[ob84])};
      const uint32_t al[4] = {__float_as_uint(ql[oa]), __float_as_uint(ql[ob8]), __float_as_uint(ql[oa4]),
                              __float_as_uint(ql[ob84])};
      const uint32_t bh0 = __float_as_uint(kth[k0]), bh1 = __float_as_uint(kth[k1]);
      const uint32_t bl0 = __float_as_uint(ktl[k0]), bl1 = __float_as_uint(ktl[k1]);
      mma8(aL[kk & 1], al, bh0, bh1);
      mma8(aL[kk & 1], ah, bl0, bl1);
      mma8(aH[kk & 1], ah, bh0, bh1);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) accs[half][e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
  }
  float a[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) a[e] = NH == 2 ? accs[0][e] + accs[NH - 1][e] : accs[0][e];
  float* am = sm + W::AM + nb * C * CS;
  const int t = 16 * mtA + gid;
  const int s = 8 * ns + 2 * tig;
  am[t * CS + s] = (s <= t) ? a[0] : 0.f;
  am[t * CS + s + 1] = (s + 1 <= t) ? a[1] : 0.f;
  am[(t + 8) * CS + s] = (s <= t + 8) ? a[2] : 0.f;
  am[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? a[3] : 0.f;
}

// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible: q split in place (hi) and into q lo, k into K^T
// hi over its own rows and K^T lo, the gate scan and vote, then A unless the chunk takes the safe path.
template <int DP>
__device__ __forceinline__ void wsg_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, DPS = W::DPS, NP = W::NP, NQ4 = C * DP / 4, KXR = (NQ4 + NP - 1) / NP;
  float* buf = sm + (c % 3) * W::BUF;
  const int nb = c & 1;
  float* qs = buf + W::QB;
  float* ql = sm + W::QL + nb * C * DP;
  float* kth = buf + W::KR;
  float* ktl = sm + W::KTL + nb * C * DP;
  for (int i = ptid; i < NQ4; i += NP) {
    const int o = 4 * i;
    const float4 x = *reinterpret_cast<const float4*>(qs + o);
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(x.x, h0, l0);
    split(x.y, h1, l1);
    split(x.z, h2, l2);
    split(x.w, h3, l3);
    *reinterpret_cast<uint4*>(qs + o) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(ql + o) = make_uint4(l0, l1, l2, l3);
  }
  // k: every row value is read before K^T hi lands over the rows.
  float kx[KXR][4];
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = ptid + r * NP;
    const int d = idx & (DP - 1);
    const int t4 = ((unsigned)idx / DP) * 4;
#pragma unroll
    for (int u = 0; u < 4; ++u) kx[r][u] = idx < NQ4 ? kth[(t4 + u) * DPS + d] : 0.f;
  }
  prep_sync<NP>();
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = ptid + r * NP;
    if (idx < NQ4) {
      const int d = idx & (DP - 1);
      const int t4 = ((unsigned)idx / DP) * 4;
      uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
      split(kx[r][0], h0, l0);
      split(kx[r][1], h1, l1);
      split(kx[r][2], h2, l2);
      split(kx[r][3], h3, l3);
      const int o = wg_ktoff(wg_np(d), t4);
      *reinterpret_cast<uint4*>(kth + o) = make_uint4(h0, h1, h2, h3);
      *reinterpret_cast<uint4*>(ktl + o) = make_uint4(l0, l1, l2, l3);
    }
  }
  // Gate scan (every prep warp; warp 0 publishes G and beta / G).
  const float* gsm = buf + W::GR;
  const float* bsm = buf + W::BR;
  float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float o = __shfl_up_sync(kFull, G, off);
    if (lane >= off) G *= o;
  }
  const float GC = __shfl_sync(kFull, G, 31);
  const int pred = !(GC >= kSafe);
  if (pw == 0) {
    sm[W::GS + nb * C + lane] = G;
    sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
  }
  wg_proxy_fence();  // q hi / lo, K^T hi / lo visible to the consumers' wgmma after the CTA barrier
  const int safe = prep_vote<NP>(pred);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (safe || pw >= 6) return;
  wsg_atile<DP>(sm, c, pw, gid, tig);
}

// YLW: the prep warps (thread ptid of NP) write chunk c's staged y rows t < n as float4 row pieces.
template <int DP>
__device__ __forceinline__ void wsg_store_y(const float* sm, float* __restrict__ y, int b, int h, int T, int H, int c,
                                            int ptid) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, R4 = DP / 4;
  const int t0 = c * C, n = min(C, T - t0);
  const long long rs = (long long)H * DP;
  float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
  const float* ys = sm + W::YS + (c & 1) * C * W::YSS;
  for (int idx = ptid; idx < C * R4; idx += W::NP) {
    const int t = (unsigned)idx / R4, c4 = idx & (R4 - 1);
    if (t < n) *reinterpret_cast<float4*>(yb + t * rs + 4 * c4) = *reinterpret_cast<const float4*>(ys + t * W::YSS + 4 * c4);
  }
}

template <int DP>
__global__ void __launch_bounds__(512, 1)
gd_wsg_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
              const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, NCS = W::NCS, CS = W::CS, NKK = DP / 8, NA = DP / 64;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2;
  const int tig = lane & 3;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;

  for (int i = tid; i < W::TOTAL; i += 512) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  const int* sfl = reinterpret_cast<const int*>(sm + W::SF);
  if (warp >= W::NCW) {
    // ---- producers: the prep warps prepare chunk c+1 while the consumers run chunk c; the load warps load c+2.
    if constexpr (W::REG_P > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(W::REG_P));
    const int ptid = tid - 32 * W::NCW;
    const int pw = warp - W::NCW;
    const bool loader = warp >= 16 - W::NLW;
    const int lt = W::NLW == 1 ? lane : tid - 32 * (16 - W::NLW);  // load thread
    if (loader) {
      wsg_load<DP>(sm, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), lt);
      __pipeline_commit();
      if (nchunks > 1) wsg_load<DP>(sm + W::BUF, q, k, v, gate, beta, b, h, T, H, C, min(C, T - C), lt);
      __pipeline_commit();
      __pipeline_wait_prior(1);
    }
    producer_sync<W::NPROD>();  // chunk 0's inputs visible to the prep warps
    if (!loader) wsg_prepare<DP>(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    cta_sync();
    for (int ch = 0; ch < nchunks; ++ch) {
      if constexpr (W::YLW) {
        if (!loader && ch >= 1) wsg_store_y<DP>(sm, y, b, h, T, H, ch - 1, ptid);  // staged and published last chunk
      }
      if (ch + 1 < nchunks) {
        if (loader) __pipeline_wait_prior(0);
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
        if (loader) {
          // chunk c+2 into chunk c-1's buffer, free since the last CTA barrier
          const int t2 = (ch + 2) * C;
          if (ch + 2 < nchunks)
            wsg_load<DP>(sm + ((ch + 2) % 3) * W::BUF, q, k, v, gate, beta, b, h, T, H, t2, min(C, T - t2), lt);
          __pipeline_commit();
        } else {
          wsg_prepare<DP>(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        }
      }
      cta_sync();  // chunk c consumed; chunk c+1 prepared
    }
    if constexpr (W::YLW) {
      if (!loader) wsg_store_y<DP>(sm, y, b, h, T, H, nchunks - 1, ptid);
    }
    return;
  }

  // ---- consumers: warpgroup w owns S^T rows 64 w .. 64 w + 63; this warp rows j0 and j0 + 8.
  if constexpr (W::REG_C > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(W::REG_C));
  const int j0 = 16 * warp + gid;
  const long long rs = (long long)H * DP;
  // S^T tile kk: (j0, c), (j0, c+1), (j0+8, c), (j0+8, c+1) in permuted column positions c = 8 kk + 2 tig, that is
  // state columns d and d + 4 with d = 8 kk + tig.
  float S[NKK][4];
#pragma unroll
  for (int kk = 0; kk < NKK; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + (ch % 3) * W::BUF;
    const float* qs = cur + W::QB;
    const float* kth = cur + W::KR;
    const float* vsm = cur + W::VR;
    const float* ql = sm + W::QL + nb * C * DP;
    const float* ktl = sm + W::KTL + nb * C * DP;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    if (!sfl[nb]) {
      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in quarters of 4 k steps (the split S of a quarter
      // is 32 registers).
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
      for (int qb = 0; qb < NKK / 4; ++qb) {
        uint32_t ah[4][4], al[4][4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int kk = 4 * qb + u;
          split(S[kk][0], ah[u][0], al[u][0]);
          split(S[kk][2], ah[u][1], al[u][1]);
          split(S[kk][1], ah[u][2], al[u][2]);
          split(S[kk][3], ah[u][3], al[u][3]);
        }
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
        wg_fence();
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int dq = 2 * (4 * qb + u);  // 16-byte column of q where this k step starts
          const uint64_t dh = wg_desc(qs + dq * 32, 128, 32 * DP);
          const uint64_t dl = wg_desc(ql + dq * 32, 128, 32 * DP);
          wg_mma_n32(O, al[u], dh);
          wg_mma_n32(O, ah[u], dl);
          wg_mma_n32(O, ah[u], dh);
        }
        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
      }
      // Vt^T fragments (A operand, rows j, k = s) for every s step, split.
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int s0 = 8 * ks + tig;
        const float ca = cfs[s0];
        const float cb = cfs[s0 + 4];
        split(vsm[s0 * NCS + j0] * ca, vh[ks][0], vl[ks][0]);
        split(vsm[s0 * NCS + j0 + 8] * ca, vh[ks][1], vl[ks][1]);
        split(vsm[(s0 + 4) * NCS + j0] * cb, vh[ks][2], vl[ks][2]);
        split(vsm[(s0 + 4) * NCS + j0 + 8] * cb, vh[ks][3], vl[ks][3]);
      }
      // + Vt^T A^T, mma.sync
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
      // y(c) = G_t O^T, rows t < n: from registers, or (YLW) into the staging rows of chunk c.
      if constexpr (W::YLW) {
        float* ys = sm + W::YS + nb * C * W::YSS;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int t = 8 * nt + 2 * tig;
          const float g0 = gsc[t], g1 = gsc[t + 1];
          ys[t * W::YSS + j0] = O[nt][0] * g0;
          ys[t * W::YSS + j0 + 8] = O[nt][2] * g0;
          ys[(t + 1) * W::YSS + j0] = O[nt][1] * g1;
          ys[(t + 1) * W::YSS + j0 + 8] = O[nt][3] * g1;
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int t = 8 * nt + 2 * tig;
          if (t < n) {
            const float g = gsc[t];
            yb[t * rs + j0] = O[nt][0] * g;
            yb[t * rs + j0 + 8] = O[nt][2] * g;
          }
          if (t + 1 < n) {
            const float g = gsc[t + 1];
            yb[(t + 1) * rs + j0] = O[nt][1] * g;
            yb[(t + 1) * rs + j0 + 8] = O[nt][3] * g;
          }
        }
      }
      // ---- S^T = G_C (S^T + Vt^T K): a fresh 64 x 64 accumulator for each 64-column block, 4 k steps x 3
      // wgmma m64n64k8 each.
      float acc[NA][8][4];
#pragma unroll
      for (int a = 0; a < NA; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[a][kk][e] = 0.f;
#pragma unroll
      for (int a = 0; a < NA; ++a) wg_keep(acc[a]);
      wg_keep(vh);
      wg_keep(vl);
      wg_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int o = (2 * ks) * 32;
#pragma unroll
        for (int a = 0; a < NA; ++a) {
          const uint64_t dh = wg_desc(kth + 2048 * a + o, 128, 1024), dl = wg_desc(ktl + 2048 * a + o, 128, 1024);
          wg_mma_n64(acc[a], vl[ks], dh);
          wg_mma_n64(acc[a], vh[ks], dl);
          wg_mma_n64(acc[a], vh[ks], dh);
        }
      }
      wg_commit();
      wg_wait0();
#pragma unroll
      for (int a = 0; a < NA; ++a) wg_keep(acc[a]);
      wg_keep(vh);
      wg_keep(vl);
      const float GC = gsc[C - 1];
#pragma unroll
      for (int a = 0; a < NA; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
#pragma unroll
          for (int e = 0; e < 4; ++e) S[8 * a + kk][e] = (S[8 * a + kk][e] + acc[a][kk][e]) * GC;
    } else {
      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k likewise from K^T).
      const float* gsm = cur + W::GR;
      const float* bsm = cur + W::BR;
      for (int t = 0; t < n; ++t) {
        const float g = gsm[t];
        const float bt = bsm[t];
        const float cv0 = bt * vsm[t * NCS + j0];
        const float cv1 = bt * vsm[t * NCS + j0 + 8];
        float p0 = 0.f, p1 = 0.f;
#pragma unroll
        for (int kk = 0; kk < NKK; ++kk) {
          const int d = 8 * kk + tig;
          const int oq = wsg_qoff<DP>(t, d);
          const int ok = wg_ktoff(wg_np(d), t);
          const float kx = kth[ok] + __uint_as_float(__float_as_uint(ktl[ok]) - 0x1000u);
          const float ky = kth[ok + 4] + __uint_as_float(__float_as_uint(ktl[ok + 4]) - 0x1000u);
          const float qx = qs[oq] + __uint_as_float(__float_as_uint(ql[oq]) - 0x1000u);
          const float qy = qs[oq + 32] + __uint_as_float(__float_as_uint(ql[oq + 32]) - 0x1000u);
          S[kk][0] = fmaf(cv0, kx, S[kk][0] * g);
          S[kk][1] = fmaf(cv0, ky, S[kk][1] * g);
          S[kk][2] = fmaf(cv1, kx, S[kk][2] * g);
          S[kk][3] = fmaf(cv1, ky, S[kk][3] * g);
          p0 = fmaf(qx, S[kk][0], p0);
          p0 = fmaf(qy, S[kk][1], p0);
          p1 = fmaf(qx, S[kk][2], p1);
          p1 = fmaf(qy, S[kk][3], p1);
        }
        p0 += __shfl_xor_sync(kFull, p0, 1);
        p0 += __shfl_xor_sync(kFull, p0, 2);
        p1 += __shfl_xor_sync(kFull, p1, 1);
        p1 += __shfl_xor_sync(kFull, p1, 2);
        if (tig == 0) {
          if constexpr (W::YLW) {
            float* ys = sm + W::YS + nb * C * W::YSS;
            ys[t * W::YSS + j0] = p0;
            ys[t * W::YSS + j0 + 8] = p1;
          } else {
            yb[t * rs + j0] = p0;
            yb[t * rs + j0 + 8] = p1;
          }
        }
      }
    }
    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}

template <int DP>
void launch_wsg(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H) {
  const size_t smem = sizeof(float) * (size_t)WsgCfg<DP>::TOTAL;
  C10_CUDA_CHECK(cudaFuncSetAttribute(gd_wsg_kernel<DP>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  gd_wsg_kernel<DP><<<B * H, 512, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
