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

