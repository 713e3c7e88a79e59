// ---------------------------------------------------------------------------------------------
// v53 / v54: gd_wsg_kernel's roles at D = 128 with the products on fp16 wgmma (twice the TF32 rate). Each operand
// is split in two fp16 pieces, x s = hi + lo with hi = fp16(x s), lo = fp16(x s - hi), under a power-of-two scale s
// that puts the largest |x| of its scale group in [2^14, 2^15) (fp16's 11-bit significand twice: what 3xTF32 keeps,
// and fp16's exponent range only has to hold one group's spread). Scale groups are ones that factor out of the
// product: S^T and Vt^T by row j (the A operands), q by step t (a column of O^T, a row of A), k by step s for A = Q K^T
// (a column of A) and by state column i for K^T Vt (a column of its accumulator, unscaled in the update). v54: A on
// one prep warpgroup's wgmma (v53 built it with mma.sync, which waits behind the consumers' wgmma), so q and k are
// split first, behind a prep barrier; the raw q and k are read only by that split, so they need two buffers, not
// three, and the safe path reads the pieces. A Vt stays 3xTF32 on mma.sync.

struct WshCfg {
  static constexpr int DP = 128, C = 32, DPS = DP + 8, NCS = DP + 8, CS = 36;
  static constexpr int NCW = 8, NLW = 1, NBUF = 3, NBQK = 2, REG_C = 168, REG_P = 88, QG = 4;
  static constexpr int NPW = 16 - NCW - NLW;        // prep warps: the first four (a warpgroup) also build A
  static constexpr int NP = 32 * NPW;
  static constexpr int NPROD = 32 * (NPW + NLW);
  static constexpr int QB = 0, KR = QB + C * DP, QKBUF = KR + C * DPS;          // raw q (blocked), k rows: NBQK buffers
  static constexpr int VR = 0, GR = VR + C * NCS, BR = GR + C, VBUF = BR + C;   // raw v rows, gate, beta: NBUF buffers
  static constexpr int VB = NBQK * QKBUF;
  static constexpr int H16 = C * DP / 2;            // floats of one C x DP fp16 array
  static constexpr int QH = VB + NBUF * VBUF;       // q hi (wsh_qoff by step), 2 chunks
  static constexpr int QL = QH + 2 * H16;           // q lo
  static constexpr int KAH = QL + 2 * H16;          // k hi (wsh_qoff by step), 2 chunks, for A
  static constexpr int KAL = KAH + 2 * H16;         // k lo, for A
  static constexpr int KH = KAL + 2 * H16;          // k hi (wsh_koff by state column), 2 chunks, for K^T Vt
  static constexpr int KL = KH + 2 * H16;           // k lo, for K^T Vt
  static constexpr int RQ = KL + 2 * H16;           // 1 / (q's scale) by step t, 2 chunks
  static constexpr int RKA = RQ + 2 * C;            // 1 / (k's scale) by step s, 2 chunks
  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale) by state column i, 2 chunks
  static constexpr int AM = RK + 2 * DP;            // A, 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks
  static constexpr int CF = GS + 2 * C;             // beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks
  static constexpr int TOTAL = SF + 4;
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert(QKBUF % 4 == 0 && VBUF % 4 == 0 && VB % 4 == 0 && QH % 4 == 0 && RQ % 4 == 0 && RK % 4 == 0 &&
                AM % 4 == 0, "16-byte aligned");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
};

// One chunk's inputs by cp.async on the load warp (lane lt): q into its blocked layout and k rows in a q / k buffer,
// v rows, gate and beta in a v buffer (wsg_load's copies, two destinations). The caller commits the group.
__device__ __forceinline__ void wsh_load(float* qkb, float* vb, const float* __restrict__ q, const float* __restrict__ k,
                                         const float* __restrict__ v, const float* __restrict__ gate,
                                         const float* __restrict__ beta, int b, int h, int T, int H, int t0, int n,
                                         int lt) {
  using W = WshCfg;
  constexpr int DP = W::DP, R4 = DP / 4;
  const long long rs = (long long)H * DP;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * DP;
  if (n == W::C) {
#pragma unroll 4
    for (int it = 0; it < W::C * R4 / 32; ++it) {
      const int idx = lt + it * 32;
      // q: 8 consecutive lanes take 8 rows of one 16-byte column, so their stores fill distinct banks.
      const int t8 = idx & 7, e = (idx >> 3) & (R4 - 1), tb = (unsigned)idx / (8 * R4);
      __pipeline_memcpy_async(qkb + W::QB + tb * (8 * DP) + e * 32 + t8 * 4, q + base + (8 * tb + t8) * rs + 4 * e, 16);
      const int t = it * (32 / R4) + (unsigned)lt / R4, c4 = lt & (R4 - 1);
      const long long o = base + t * rs + 4 * c4;
      __pipeline_memcpy_async(qkb + W::KR + t * W::DPS + 4 * c4, k + o, 16);
      __pipeline_memcpy_async(vb + W::VR + t * W::NCS + 4 * c4, v + o, 16);
    }
  } else {
    for (int idx = lt; idx < n * R4; idx += 32) {
      const int t = (unsigned)idx / R4, c4 = idx & (R4 - 1);
      const long long o = base + t * rs + 4 * c4;
      __pipeline_memcpy_async(qkb + W::QB + wsg_qoff<DP>(t, 4 * c4), q + o, 16);
      __pipeline_memcpy_async(qkb + W::KR + t * W::DPS + 4 * c4, k + o, 16);
      __pipeline_memcpy_async(vb + W::VR + t * W::NCS + 4 * c4, v + o, 16);
    }
  }
  if (lt < n) {
    const long long o = ((long long)b * T + t0 + lt) * H + h;
    __pipeline_memcpy_async(vb + W::GR + lt, gate + o, 4);
    __pipeline_memcpy_async(vb + W::BR + lt, beta + o, 4);
  }
}

// Offsets in halves. q as wgmma's A (M = t, K = i) or Q^T as its B (K = i, N = t), and k likewise as K^T for
// A = Q K^T: core matrices of 8 steps x 8 columns, 128 B apart along i, 2 KB along t. K as wgmma's B (K = s, N = i): core matrices of 8 columns x 8 steps, 128 B apart along s, 512 B
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

// A (64 x 32 per warpgroup) += q (64 x 16 fp16, shared memory; steps 32..63 lie beyond the chunk and are discarded)
// * K^T (16 x 32 fp16, shared memory), both K-major.
__device__ __forceinline__ void wh_mma_ss_n32(float (&d)[4][4], uint64_t ad, uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1, 0, 0;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "l"(ad), "l"(bd));
}

// A = causal(Q K^T) of chunk c on the first prep warpgroup (warps pw 0..3, rows t = 16 pw + gid and + 8): 8 k steps
// x 3 wgmma from the fp16 pieces, unscaled by step (q's scale for t, k's for s), masked and stored for A Vt.
__device__ __forceinline__ void wsh_amat(float* sm, int nb, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C, CS = W::CS;
  const float* qh = sm + W::QH + nb * W::H16;
  const float* ql = sm + W::QL + nb * W::H16;
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
    const uint64_t dqh = wg_desc(qh + 64 * kk, 128, 2048), dql = wg_desc(ql + 64 * kk, 128, 2048);
    const uint64_t dkh = wg_desc(kh + 64 * kk, 128, 2048), dkl = wg_desc(kl + 64 * kk, 128, 2048);
    wh_mma_ss_n32(a, dql, dkh);
    wh_mma_ss_n32(a, dqh, dkl);
    wh_mma_ss_n32(a, dqh, dkh);
  }
  wg_commit();
  wg_wait0();
  wg_keep(a);
  if (pw >= 2) return;  // rows 32..63: beyond the chunk
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
}

// q's steps 8 tb .. 8 tb + 7 (one warp) into q hi / lo, each step under its own scale; 1 / scale into rq (KROWS: k's
// steps from its rows, for A). Lane: step 8 tb + (lane & 7), 16-byte columns g, g + 4, ..., g + 28 (g = lane >> 3), so
// 8 lanes read 128 contiguous bytes of q's blocked layout (k's rows: 2-way bank conflicts) and 16 lanes write 128
// contiguous bytes.
template <bool KROWS>
__device__ __forceinline__ void wsh_split_q(const float* qr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane) {
  const int r = lane & 7, g = lane >> 3, t = 8 * tb + r;
  float4 x[8];
  float m = 0.f;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    x[u] = *reinterpret_cast<const float4*>(KROWS ? qr + t * WshCfg::DPS + 4 * (g + 4 * u)
                                                  : qr + tb * 1024 + (g + 4 * u) * 32 + r * 4);
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

// Prep warps: the gate scan and vote; the fp16 pieces (q by step, k by step for A, k by state column for K^T Vt:
// twelve blocks, warp pw takes blocks pw and pw + 7), also on a safe chunk (its path reads them); then, unless the
// chunk is safe, behind a prep barrier, A on the first prep warpgroup.
__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C, NP = W::NP;
  const float* qkb = sm + (c % W::NBQK) * W::QKBUF;
  const float* vb = sm + W::VB + (c % W::NBUF) * W::VBUF;
  const int nb = c & 1;
  const float* gsm = vb + W::GR;
  const float* bsm = vb + W::BR;
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
  const float* qr = qkb + W::QB;
  const float* kr = qkb + W::KR;
#pragma unroll 1
  for (int blk = pw; blk < 12; blk += W::NPW) {
    const int bt = blk & 3;
    if (blk < 4) {
      wsh_split_q<false>(qr, reinterpret_cast<uint32_t*>(sm + W::QH + nb * W::H16),
                         reinterpret_cast<uint32_t*>(sm + W::QL + nb * W::H16), sm + W::RQ + nb * C, bt, lane);
    } else if (blk < 8) {
      wsh_split_q<true>(kr, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                        reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C, bt, lane);
    } else {
      wsh_split_k(kr, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), sm + W::RK + nb * W::DP, bt, lane);
    }
  }
  wg_proxy_fence();  // the pieces visible to wgmma (A's after the vote's barrier, the consumers' after the CTA's)
  const int safe = prep_vote<NP>(pred);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (!safe && pw < 4) wsh_amat(sm, nb, pw, gid, tig);
}

__global__ void __launch_bounds__(512, 1)
gd_wsh_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
              const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H) {
  using W = WshCfg;
  constexpr int DP = W::DP, C = W::C, NCS = W::NCS, CS = W::CS;
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
      static_assert(W::NBUF == 3 && W::NBQK == 2, "chunks 0 and 1 first, then c + 2 during chunk c");
      wsh_load(sm, sm + W::VB, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), lane);
      __pipeline_commit();
      if (1 < nchunks) wsh_load(sm + W::QKBUF, sm + W::VB + W::VBUF, q, k, v, gate, beta, b, h, T, H, C, min(C, T - C), lane);
      __pipeline_commit();
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
          // chunk c + 2: q / k into chunk c's buffer (split during chunk c - 1), v into chunk c - 1's
          const int ca = ch + 2, t2 = ca * C;
          if (ca < nchunks)
            wsh_load(sm + (ca % W::NBQK) * W::QKBUF, sm + W::VB + (ca % W::NBUF) * W::VBUF, q, k, v, gate, beta, b, h,
                     T, H, t2, min(C, T - t2), lane);
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
    const float* cur = sm + W::VB + (ch % W::NBUF) * W::VBUF;
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
      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits).
      const __half* qph = reinterpret_cast<const __half*>(sm + W::QH + nb * W::H16);
      const __half* qpl = reinterpret_cast<const __half*>(sm + W::QL + nb * W::H16);
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAL + nb * W::H16);
      const float* rq = sm + W::RQ + nb * C;
      const float* rka = sm + W::RKA + nb * C;
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
          const int o = wsh_qoff(t, i);  // even: a pair of halves
          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + o));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + o));
          const float2 ka = __half22float2(*reinterpret_cast<const __half2*>(kph + o));
          const float2 kb = __half22float2(*reinterpret_cast<const __half2*>(kpl + o));
          const float2 qx = make_float2((qa.x + qb.x) * rq[t], (qa.y + qb.y) * rq[t]);
          const float2 kx = make_float2((ka.x + kb.x) * rka[t], (ka.y + kb.y) * rka[t]);
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
