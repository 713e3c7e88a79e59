// ---------------------------------------------------------------------------------------------
// v53: gd_wsg_kernel's roles at D = 128 with Q S0 and K^T Vt on fp16 wgmma (twice the TF32 rate). Each operand is
// split in two fp16 pieces, x s = hi + lo with hi = fp16(x s), lo = fp16(x s - hi), under a power-of-two scale s
// that puts the largest |x| of its scale group in [2^14, 2^15) (fp16's 11-bit significand twice: what 3xTF32 keeps,
// and fp16's exponent range only has to hold one group's spread). Scale groups are ones that factor out of the
// product: S^T and Vt^T by row j (the A operands), q by step t (a column of O^T), k by state column i (a column of
// the K^T Vt accumulator, unscaled in the update). A = causal(Q K^T) and A Vt stay 3xTF32 on mma.sync (A's
// contraction runs over i, which k's scale does not factor out of). The raw inputs stay in their buffers: the A
// tiles split their own operands as they load them (as v52 at D = 64) and the safe path reads them exactly.

struct WshCfg {
  static constexpr int DP = 128, C = 32, DPS = DP + 8, NCS = DP + 8, CS = 36;
  static constexpr int NCW = 8, NLW = 1, NBUF = 3, REG_C = 168, REG_P = 88, QG = 4;
  static constexpr int NPW = 16 - NCW - NLW;         // prep warps: 6 build A tiles, then each splits a block
  static constexpr int NP = 32 * NPW;
  static constexpr int NPROD = 32 * (NPW + NLW);
  static constexpr int QB = 0, KR = QB + C * DP, VR = KR + C * DPS, GR = VR + C * NCS, BR = GR + C, BUF = BR + C;
  static constexpr int H16 = C * DP / 2;            // floats of one C x DP fp16 array
  static constexpr int QH = NBUF * BUF;             // Q^T hi (wsh_qoff), 2 chunks
  static constexpr int QL = QH + 2 * H16;           // Q^T lo
  static constexpr int KH = QL + 2 * H16;           // K hi (wsh_koff), 2 chunks
  static constexpr int KL = KH + 2 * H16;           // K lo
  static constexpr int RQ = KL + 2 * H16;           // 1 / (q's scale) by step t, 2 chunks
  static constexpr int RK = RQ + 2 * C;             // 1 / (k's scale) by state column i, 2 chunks
  static constexpr int AM = RK + 2 * DP;            // A (its k halves summed), 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks
  static constexpr int CF = GS + 2 * C;             // beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks
  static constexpr int TOTAL = SF + 4;
  using L = WsgCfg<128>;                            // wsg_load's buffer layout
  static_assert(QB == L::QB && KR == L::KR && VR == L::VR && GR == L::GR && BR == L::BR && BUF == L::BUF, "buffers");
  static_assert(C == L::C && NCS == L::NCS && NLW == L::NLW, "wsg_load, wsg_vt_frags");
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert(QH % 4 == 0 && RQ % 4 == 0 && RK % 4 == 0 && AM % 4 == 0, "16-byte aligned");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
};

// Offsets in halves. Q^T as wgmma's B (K = i, N = t): core matrices of 8 steps x 8 columns, 128 B apart along i,
// 2 KB along t. K as wgmma's B (K = s, N = i): core matrices of 8 columns x 8 steps, 128 B apart along s, 512 B
// along i, the steps of each 8 in wg_np's order (position 2a + b holds step a + 4b), which is the order of a TF32
// fragment's k positions (tig, tig + 4): the fp16 Vt^T fragments are the TF32 ones' values repacked.
__device__ __forceinline__ int wsh_qoff(int t, int i) { return (t >> 3) * 1024 + (i >> 3) * 64 + (t & 7) * 8 + (i & 7); }
__device__ __forceinline__ int wsh_koff(int s, int i) { return (i >> 3) * 256 + (wg_np(s) >> 3) * 64 + (i & 7) * 8 + (wg_np(s) & 7); }

// s = 2^(14 - e) for m in [2^e, 2^(e+1)), so |x| <= m scales below 2^15; inv = 1 / s. Both normal floats for any m.
__device__ __forceinline__ void pow2_scale(float m, float& s, float& inv) {
  const int eb = (int)(__float_as_uint(m) >> 23);  // m >= 0; 255: inf or nan
  const int f = min(max(268 - eb, 2), 252);
  s = __uint_as_float((uint32_t)f << 23);
  inv = __uint_as_float((uint32_t)(254 - f) << 23);
}

// Scaled values x0, x1 into fp16 pieces, packed in pairs (x0 in the low half).
__device__ __forceinline__ void split_h2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 hf = __half22float2(h);
  const __half2 l = __floats2half2_rn(x0 - hf.x, x1 - hf.y);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = *reinterpret_cast<const uint32_t*>(&l);
}

// d (64 x 32 per warpgroup) += a (64 x 16 fp16, registers) * b (16 x 32 fp16, shared memory, K-major).
__device__ __forceinline__ void wh_mma_n32(float (&d)[4][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1, 0;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// d (64 x 64 per warpgroup) += a (64 x 16 fp16, registers) * b (16 x 64 fp16, shared memory, K-major).
__device__ __forceinline__ void wh_mma_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1, 0;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
        "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// A = causal(Q K^T) of chunk c from the raw q and k, split as loaded: tile (mtA, ns) = item w (0..5), each 64-column
// k half in turn, the halves summed in gd_wg_kernel's order (wsg_atile's values).
__device__ __forceinline__ void wsh_atile(float* sm, int c, int w, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C, CS = W::CS, DPS = W::DPS;
  const float* buf = sm + (c % W::NBUF) * W::BUF;
  const float* qr = buf + W::QB;
  const float* kr = buf + W::KR;
  const int mtA = w < 2 ? 0 : 1;
  const int ns = w < 2 ? w : w - 2;
  const int ta = 16 * mtA + gid;
  const int sb = 8 * ns + gid;
  float accs[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const int d = half * 64 + 8 * kk + tig;
      const int oa = wsg_qoff<128>(ta, d), oa4 = oa + 32, ob8 = wsg_qoff<128>(ta + 8, d), ob84 = ob8 + 32;
      uint32_t ah[4], al[4], bh0, bh1, bl0, bl1;
      split(qr[oa], ah[0], al[0]);
      split(qr[ob8], ah[1], al[1]);
      split(qr[oa4], ah[2], al[2]);
      split(qr[ob84], ah[3], al[3]);
      split(kr[sb * DPS + d], bh0, bl0);
      split(kr[sb * DPS + d + 4], bh1, bl1);
      mma8(aL[kk & 1], al, bh0, bh1);
      mma8(aL[kk & 1], ah, bl0, bl1);
      mma8(aH[kk & 1], ah, bh0, bh1);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) accs[half][e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
  }
  float* am = sm + W::AM + (c & 1) * C * CS;
  const int t = 16 * mtA + gid;
  const int s = 8 * ns + 2 * tig;
  const float a0 = accs[0][0] + accs[1][0], a1 = accs[0][1] + accs[1][1];
  const float a2 = accs[0][2] + accs[1][2], a3 = accs[0][3] + accs[1][3];
  am[t * CS + s] = (s <= t) ? a0 : 0.f;
  am[t * CS + s + 1] = (s + 1 <= t) ? a1 : 0.f;
  am[(t + 8) * CS + s] = (s <= t + 8) ? a2 : 0.f;
  am[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? a3 : 0.f;
}

// q's steps 8 tb .. 8 tb + 7 (one warp) into Q^T hi / lo, each step under its own scale; 1 / scale into rq.
// Lane: step 8 tb + (lane & 7), 16-byte columns g, g + 4, ..., g + 28 (g = lane >> 3), so 8 lanes read 128
// contiguous bytes of q's blocked layout and 16 lanes write 128 contiguous bytes.
__device__ __forceinline__ void wsh_split_q(const float* qr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane) {
  const int r = lane & 7, g = lane >> 3, t = 8 * tb + r;
  float4 x[8];
  float m = 0.f;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    x[u] = *reinterpret_cast<const float4*>(qr + tb * 1024 + (g + 4 * u) * 32 + r * 4);
    m = fmaxf(m, fmaxf(fmaxf(fabsf(x[u].x), fabsf(x[u].y)), fmaxf(fabsf(x[u].z), fabsf(x[u].w))));
  }
  m = fmaxf(m, __shfl_xor_sync(kFull, m, 8));
  m = fmaxf(m, __shfl_xor_sync(kFull, m, 16));
  float sc, inv;
  pow2_scale(m, sc, inv);
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    uint32_t h0, h1, l0, l1;
    split_h2(x[u].x * sc, x[u].y * sc, h0, l0);
    split_h2(x[u].z * sc, x[u].w * sc, h1, l1);
    const int o = wsh_qoff(t, 4 * (g + 4 * u)) >> 1;
    *reinterpret_cast<uint2*>(qh + o) = make_uint2(h0, h1);
    *reinterpret_cast<uint2*>(ql + o) = make_uint2(l0, l1);
  }
  if (g == 0) rq[t] = inv;
}

// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps) into K hi / lo, each column under
// its own scale; 1 / scale into rk.
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float* rk, int g, int lane) {
  constexpr int DPS = WshCfg::DPS;
  const int i = 32 * g + lane;
  float x[32];
  float m = 0.f;
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    x[s] = kr[s * DPS + i];
    m = fmaxf(m, fabsf(x[s]));
  }
  float sc, inv;
  pow2_scale(m, sc, inv);
#pragma unroll
  for (int b8 = 0; b8 < 4; ++b8) {
    const float* xb = x + 8 * b8;
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;  // positions (0, 1), (2, 3), ... hold steps (0, 4), (1, 5), ...
    split_h2(xb[0] * sc, xb[4] * sc, h0, l0);
    split_h2(xb[1] * sc, xb[5] * sc, h1, l1);
    split_h2(xb[2] * sc, xb[6] * sc, h2, l2);
    split_h2(xb[3] * sc, xb[7] * sc, h3, l3);
    const int o = wsh_koff(8 * b8, i) >> 1;
    *reinterpret_cast<uint4*>(kh + o) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(kl + o) = make_uint4(l0, l1, l2, l3);
  }
  rk[i] = inv;
}

// Prep warps: the gate scan and vote; then, unless the chunk takes the safe path (which reads the raw inputs), the
// A tiles on warps 0..5 and the fp16 pieces: q's step blocks 2, 3 after warps 0, 1's tiles, k's column blocks after
// warps 2..5's, q's blocks 0, 1 on warp 6.
__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C, NP = W::NP;
  const float* buf = sm + (c % W::NBUF) * W::BUF;
  const int nb = c & 1;
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
  const int safe = prep_vote<NP>(pred);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (safe) return;
  const float* qr = buf + W::QB;
  const float* kr = buf + W::KR;
  uint32_t* qh = reinterpret_cast<uint32_t*>(sm + W::QH + nb * W::H16);
  uint32_t* ql = reinterpret_cast<uint32_t*>(sm + W::QL + nb * W::H16);
  uint32_t* kh = reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16);
  uint32_t* kl = reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16);
  float* rq = sm + W::RQ + nb * C;
  float* rk = sm + W::RK + nb * W::DP;
  if (pw < 6) {
    wsh_atile(sm, c, pw, gid, tig);
    if (pw < 2) wsh_split_q(qr, qh, ql, rq, 2 + pw, lane);
    else wsh_split_k(kr, kh, kl, rk, pw - 2, lane);
  } else {
    wsh_split_q(qr, qh, ql, rq, 0, lane);
    wsh_split_q(qr, qh, ql, rq, 1, lane);
  }
  wg_proxy_fence();  // the fp16 pieces visible to the consumers' wgmma after the CTA barrier
}

__global__ void __launch_bounds__(512, 1)
gd_wsh_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
              const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H) {
  using W = WshCfg;
  constexpr int DP = W::DP, C = W::C, NCS = W::NCS, CS = W::CS, DPS = W::DPS;
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
    // ---- producers: the prep warps prepare chunk c+1 while the consumers run chunk c; the load warp loads c+2.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(W::REG_P));
    const int ptid = tid - 32 * W::NCW;
    const int pw = warp - W::NCW;
    const bool loader = warp >= 16 - W::NLW;
    if (loader) {
      wsg_load<DP>(sm, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), lane);
      __pipeline_commit();
#pragma unroll
      for (int a = 1; a < W::NBUF - 1; ++a) {
        if (a < nchunks) wsg_load<DP>(sm + a * W::BUF, q, k, v, gate, beta, b, h, T, H, a * C, min(C, T - a * C), lane);
        __pipeline_commit();
      }
      __pipeline_wait_prior(W::NBUF - 2);  // chunk 0 landed
    }
    producer_sync<W::NPROD>();  // chunk 0's inputs visible to the prep warps
    if (!loader) wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    cta_sync();
    for (int ch = 0; ch < nchunks; ++ch) {
      if (ch + 1 < nchunks) {
        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
        if (loader) {
          const int ca = ch + W::NBUF - 1, t2 = ca * C;  // into chunk c-1's buffer, free since the last CTA barrier
          if (ca < nchunks)
            wsg_load<DP>(sm + (ca % W::NBUF) * W::BUF, q, k, v, gate, beta, b, h, T, H, t2, min(C, T - t2), lane);
          __pipeline_commit();
        } else {
          wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        }
      }
      cta_sync();  // chunk c consumed; chunk c+1 prepared
    }
    return;
  }

  // ---- consumers: warpgroup w owns S^T rows 64 w .. 64 w + 63; this warp rows j0 and j0 + 8.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(W::REG_C));
  const int j0 = 16 * warp + gid;
  const long long rs = (long long)H * DP;
  // S^T in the wgmma accumulator layout: S[n] holds (j0, i), (j0, i + 1), (j0 + 8, i), (j0 + 8, i + 1), i = 8 n + 2 tig.
  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + (ch % W::NBUF) * W::BUF;
    const float* vsm = cur + W::VR;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    if (!sfl[nb]) {
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      // ---- O^T = S^T Q^T: 8 k steps x 3 wgmma m64n32k16 in two groups (the pieces of a group are 32 registers);
      // S^T's rows scaled for the pieces, undone with q's step scales afterwards.
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
      if (ch > 0) {  // chunk 0: S is zero
        const uint32_t* qh = reinterpret_cast<const uint32_t*>(sm + W::QH + nb * W::H16);
        const uint32_t* ql = reinterpret_cast<const uint32_t*>(sm + W::QL + nb * W::H16);
        float m0 = 0.f, m1 = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          m0 = fmaxf(m0, fmaxf(fabsf(S[i][0]), fabsf(S[i][1])));
          m1 = fmaxf(m1, fmaxf(fabsf(S[i][2]), fabsf(S[i][3])));
        }
        m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
        m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
        m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
        m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
        float s0, inv0, s1, inv1;
        pow2_scale(m0, s0, inv0);
        pow2_scale(m1, s1, inv1);
#pragma unroll
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
          wg_keep(O);
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
      if (n == C) {
        float* yr = yb + 2 * tig * rs + j0;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          yr[8 * nt * rs] = O[nt][0] * gy[nt][0];
          yr[8 * nt * rs + 8] = O[nt][2] * gy[nt][0];
          yr[(8 * nt + 1) * rs] = O[nt][1] * gy[nt][1];
          yr[(8 * nt + 1) * rs + 8] = O[nt][3] * gy[nt][1];
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int t = 8 * nt + 2 * tig;
          if (t < n) {
            yb[t * rs + j0] = O[nt][0] * gy[nt][0];
            yb[t * rs + j0 + 8] = O[nt][2] * gy[nt][0];
          }
          if (t + 1 < n) {
            yb[(t + 1) * rs + j0] = O[nt][1] * gy[nt][1];
            yb[(t + 1) * rs + j0 + 8] = O[nt][3] * gy[nt][1];
          }
        }
      }
      if (ch + 1 == nchunks) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      // ---- S^T = G_C (S^T + Vt^T K): Vt^T's TF32 pieces summed back (exactly) and split in fp16 by row, 2 k steps
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
      const float* kh = sm + W::KH + nb * W::H16;
      const float* kl = sm + W::KL + nb * W::H16;
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
          const uint64_t dh = wg_desc(kh + 1024 * a + 64 * m, 128, 512);
          const uint64_t dl = wg_desc(kl + 1024 * a + 64 * m, 128, 512);
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
      const float GC = gsc[C - 1];
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
        }
    } else {
      // Safe path: the plain fp32 recurrence on the raw inputs.
      const float* qr = cur + W::QB;
      const float* kr = cur + W::KR;
      const float* gsm = cur + W::GR;
      const float* bsm = cur + W::BR;
      for (int t = 0; t < n; ++t) {
        const float g = gsm[t];
        const float bt = bsm[t];
        const float cv0 = bt * vsm[t * NCS + j0];
        const float cv1 = bt * vsm[t * NCS + j0 + 8];
        float p0 = 0.f, p1 = 0.f;
#pragma unroll
        for (int i8 = 0; i8 < 16; ++i8) {
          const int i = 8 * i8 + 2 * tig;
          const float2 qx = *reinterpret_cast<const float2*>(qr + wsg_qoff<DP>(t, i));
          const float2 kx = *reinterpret_cast<const float2*>(kr + t * DPS + i);
          S[i8][0] = fmaf(cv0, kx.x, S[i8][0] * g);
          S[i8][1] = fmaf(cv0, kx.y, S[i8][1] * g);
          S[i8][2] = fmaf(cv1, kx.x, S[i8][2] * g);
          S[i8][3] = fmaf(cv1, kx.y, S[i8][3] * g);
          p0 = fmaf(qx.x, S[i8][0], p0);
          p0 = fmaf(qx.y, S[i8][1], p0);
          p1 = fmaf(qx.x, S[i8][2], p1);
          p1 = fmaf(qx.y, S[i8][3], p1);
        }
        p0 += __shfl_xor_sync(kFull, p0, 1);
        p0 += __shfl_xor_sync(kFull, p0, 2);
        p1 += __shfl_xor_sync(kFull, p1, 1);
        p1 += __shfl_xor_sync(kFull, p1, 2);
        if (tig == 0) {
          yb[t * rs + j0] = p0;
          yb[t * rs + j0 + 8] = p1;
        }
      }
    }
    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}

void launch_wsh(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H) {
  const size_t smem = sizeof(float) * (size_t)WshCfg::TOTAL;
  C10_CUDA_CHECK(cudaFuncSetAttribute(gd_wsh_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  gd_wsh_kernel<<<B * H, 512, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta.data_ptr<float>(),
      y.data_ptr<float>(), T, H);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
