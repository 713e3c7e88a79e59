"""Write .gpu/v63_tma.py from candidates/scalar_gated_delta/v56_kuni.py (session 27). Session 26 found three roles
in gd_wsh_kernel each running a ~7,000-cycle chain per ~7,700-cycle chunk: the consumers, the prep warps (scan, a
pass over k for its largest value, 12 split blocks in two rounds on 7 warps, A on 4 of them), and the load warp
(~100 16-byte cp.async a lane a chunk). v63: the load by tensor-map TMA (12 `cp.async.bulk.tensor` a chunk, issued by
one thread, completing on an mbarrier a buffer; 128-byte swizzle in 32-column boxes, the raw layouts follow it),
so the load warp becomes an eighth prep warp; the prep in two rounds on two warpgroups: round one splits q (by
step, warpgroup 0) and k (by step, warpgroup 1, which also takes k's largest value from its row maxima: no pass),
round two builds A (warpgroup 0) beside K^T Vt's k split (warpgroup 1). Gate and beta by plain loads a chunk ahead."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


def cut(start, end, new, after=None):
    """Replace src[start .. end) (end exclusive and kept; start unique after the string `after`)."""
    global src
    k = src.index(after) if after else 0
    assert src.count(start, k) == 1 and src.count(end, k) >= 1, (start[:80], end[:80])
    i = src.index(start, k)
    j = src.index(end, i)
    src = src[:i] + new + src[j:]


sub("# v56_kuni: v54_famat (below)", """# v63_tma: v56_kuni (below) with, at D = 128, q, k and v loaded by tensor-map TMA (the load warp becomes an eighth
# prep warp) and the prep in two rounds on two warpgroups: q and k split by step, then A beside K^T Vt's k split.
# v56_kuni: v54_famat (below)""")
sub("#include <cuda_fp16.h>\n", "#include <cuda_fp16.h>\n#include <cuda.h>\n")

# ---- the configuration: raw tiles as TMA writes them, gate / beta apart, mbarriers
cut("struct WshCfg {\n", "// Offsets in halves. q as wgmma's A", r"""struct WshCfg {
  static constexpr int DP = 128, C = 32, CS = 36;
  static constexpr int NCW = 8, NBUF = 3, NBQK = 2, REG_C = 168, REG_P = 88, QG = 4;
  static constexpr int NPW = 16 - NCW;              // prep warps: warpgroup 0 splits q and builds A, warpgroup 1 splits
  static constexpr int NP = 32 * NPW;               // k; lane 0 of the last one issues the TMA
  static constexpr int TILE = C * DP;               // a chunk of q, k or v as TMA writes it (wsh_toff)
  static constexpr int QT = 0, KT = TILE, QKBUF = 2 * TILE;  // raw q, k: NBQK buffers
  static constexpr int VB = NBQK * QKBUF;           // raw v: NBUF tiles
  static constexpr int GB = VB + NBUF * TILE;       // gate[C], beta[C]: NBUF buffers
  static constexpr int GR = 0, BR = C, GBUF = 2 * C;
  static constexpr int H16 = C * DP / 2;            // floats of one C x DP fp16 array
  static constexpr int QH = GB + NBUF * GBUF;       // q hi (wsh_qoff by step), 2 chunks
  static constexpr int QL = QH + 2 * H16;           // q lo
  static constexpr int KAH = QL + 2 * H16;          // k hi (wsh_qoff by step), 2 chunks, for A
  static constexpr int KAL = KAH + 2 * H16;         // k lo, for A
  static constexpr int KH = KAL + 2 * H16;          // k hi (wsh_koff by state column), 2 chunks, for K^T Vt
  static constexpr int KL = KH + 2 * H16;           // k lo, for K^T Vt
  static constexpr int RQ = KL + 2 * H16;           // 1 / (q's scale) by step t, 2 chunks
  static constexpr int RKA = RQ + 2 * C;            // 1 / (k's scale) by step s, 2 chunks
  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale for K^T Vt, one a chunk), 2 chunks of DP
  static constexpr int AM = RK + 2 * DP;            // A, 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks
  static constexpr int CF = GS + 2 * C;             // beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks
  static constexpr int KMX = SF + 4;                // k's largest |value| by k-splitting warp
  static constexpr int MB = KMX + 4;                // NBUF mbarriers (8 bytes each), a chunk's TMA each
  static constexpr int TOTAL = MB + 2 * NBUF;
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert((TILE * 4) % 1024 == 0, "tiles 1024-byte aligned (the swizzle's period)");
  static_assert(QH % 4 == 0 && RQ % 4 == 0 && RK % 4 == 0 && AM % 4 == 0 && MB % 2 == 0, "aligned");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
};

// (t, d) of a 32 x 128 tile as TMA writes it: four boxes of 32 columns (4 KB each), rows of 128 bytes whose 16-byte
// words are permuted by the 128-byte swizzle (word w of row t at w ^ (t & 7)): 8 rows x 16 bytes, or 32 columns of a
// row, fall in distinct banks.
__device__ __forceinline__ int wsh_toff(int t, int d) {
  return (d >> 5) * 1024 + t * 32 + ((((d >> 2) & 7) ^ (t & 7)) << 2) + (d & 3);
}

__device__ __forceinline__ uint32_t sm_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* m, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sm_addr(m)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* m, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sm_addr(m)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* m, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "WSH_MBAR_WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n @!done bra WSH_MBAR_WAIT;\n}" ::"r"(
          sm_addr(m)),
      "r"(parity)
      : "memory");
}
// One box (32 columns x 32 steps of one head) of a (D, H, T, B) tensor into shared memory, completing on m.
__device__ __forceinline__ void tma_box(float* dst, const CUtensorMap* map, int d0, int h, int t0, int b, uint64_t* m) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(sm_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(d0), "r"(h), "r"(t0), "r"(b), "r"(sm_addr(m))
      : "memory");
}

// Chunk ca's q, k (buffer ca % NBQK) and v (buffer ca % NBUF) by 12 TMA boxes on mbarrier ca % NBUF; rows past T
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
}

// Chunk ca's gate and beta (lane t), loaded a chunk before they are stored (wsh_gb_store); zeros past T.
__device__ __forceinline__ void wsh_gb_load(const float* __restrict__ gate, const float* __restrict__ beta, int b, int h,
                                            int T, int H, int ca, int lane, float& g, float& bt) {
  const int t = ca * WshCfg::C + lane;
  g = 0.f;
  bt = 0.f;
  if (t < T) {
    const long long o = ((long long)b * T + t) * H + h;
    g = __ldg(gate + o);
    bt = __ldg(beta + o);
  }
}
__device__ __forceinline__ void wsh_gb_store(float* sm, int ca, float g, float bt, int lane) {
  using W = WshCfg;
  float* d = sm + W::GB + (ca % W::NBUF) * W::GBUF;
  d[W::GR + lane] = g;
  d[W::BR + lane] = bt;
}

""")

# ---- the splits read the TMA layout; q's and k's by step alike (k's: the warp's largest |value| too)
cut("// q's steps 8 tb .. 8 tb + 7 (one warp) into q hi / lo,", "// Prep warps: the gate scan and vote;", r"""// Steps 8 tb .. 8 tb + 7 of q or k (one warp, a raw tile) into hi / lo pieces by step, each step under its own
// scale; 1 / scale into rq. Lane: step 8 tb + (lane & 7), 16-byte columns g, g + 4, ..., g + 28 (g = lane >> 3):
// 8 lanes read 8 rows' same word (distinct banks under the swizzle) and 16 lanes write 128 contiguous bytes.
// Returns the block's largest |value| (all lanes) when WMAX.
template <bool WMAX>
__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane) {
  const int r = lane & 7, g = lane >> 3, t = 8 * tb + r;
  float4 x[8];
  float m = 0.f;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    x[u] = *reinterpret_cast<const float4*>(xr + wsh_toff(t, 4 * (g + 4 * u)));
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
  if (WMAX) {
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 1));
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 2));
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 4));
  }
  return m;
}

// k's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps: box g) into K hi / lo under the
// chunk's scale sc.
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float sc, int g, int lane) {
  const int i = 32 * g + lane;
  float x[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) x[s] = kr[wsh_toff(s, i)];
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
}

""")

cut("// Prep warps: the gate scan and vote;", "__global__ void __launch_bounds__(512, 1)\ngd_wsh_kernel(", r"""// Prep warps (pw 0..7): the gate scan (each warp); round one: q's block pw by step (warpgroup 0) or k's block
// pw - 4 by step with its largest |value| (warpgroup 1); the vote (a prep barrier); round two, unless the chunk is
// safe, A (warpgroup 0) beside K^T Vt's k block pw - 4 by state column under the chunk's scale (warpgroup 1; also
// on a safe chunk).
__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C, NP = W::NP;
  const float* qt = sm + (c % W::NBQK) * W::QKBUF + W::QT;
  const float* kt = sm + (c % W::NBQK) * W::QKBUF + W::KT;
  const float* gb = sm + W::GB + (c % W::NBUF) * W::GBUF;
  const int nb = c & 1;
  const float* gsm = gb + W::GR;
  const float* bsm = gb + W::BR;
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
  if (pw < 4) {
    wsh_split_q<false>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + nb * W::H16),
                       reinterpret_cast<uint32_t*>(sm + W::QL + nb * W::H16), sm + W::RQ + nb * C, pw, lane);
  } else {
    const float m = wsh_split_q<true>(kt, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                                      reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C,
                                      pw - 4, lane);
    if (lane == 0) sm[W::KMX + pw - 4] = m;
  }
  WSH_MARK(1, c);
  wg_proxy_fence();  // the pieces visible to A's wgmma after the vote's barrier
  const int safe = prep_vote<NP>(pred);
  WSH_MARK(2, c);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (pw < 4) {
    if (!safe) wsh_amat(sm, nb, pw, gid, tig);
  } else {
    const float km = fmaxf(fmaxf(sm[W::KMX], sm[W::KMX + 1]), fmaxf(sm[W::KMX + 2], sm[W::KMX + 3]));
    float ksc, kinv;
    pow2_scale(km, ksc, kinv);
    if (ptid == 128) sm[W::RK + nb * W::DP] = kinv;
    wsh_split_k(kt, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, pw - 4, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
  }
  WSH_MARK(3, c);
}

// Vt^T fragments of chunk c (A operand, rows j0 and j0 + 8, k = s) for every s step, split, from v's TMA tile.
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
}

""")

# ---- the kernel: tensor maps, mbarriers, producers in one role
sub("""gd_wsh_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
              const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H) {
  using W = WshCfg;
  constexpr int DP = W::DP, C = W::C, NCS = W::NCS, CS = W::CS;""",
    """gd_wsh_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
              const __grid_constant__ CUtensorMap tv, const float* __restrict__ gate, const float* __restrict__ beta,
              float* __restrict__ y, int T, int H) {
  using W = WshCfg;
  constexpr int DP = W::DP, C = W::C, CS = W::CS;""")
def ksub0(old, new):
    global src
    k = src.index("gd_wsh_kernel(const __grid_constant__")
    assert src.count(old, k, k + 20000) == 1, old[:80]
    i = src.index(old, k)
    src = src[:i] + new + src[i + len(old):]


ksub0("""  for (int i = tid; i < W::TOTAL; i += 512) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  const int* sfl = reinterpret_cast<const int*>(sm + W::SF);
  if (warp >= W::NCW) {""", """  if (sm_addr(sm) & 1023) __trap();  // wsh_toff's swizzle assumes 1024-byte aligned tiles
  for (int i = tid; i < W::MB; i += 512) sm[i] = 0.f;
  if (tid == 0) {
    for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  wg_proxy_fence();  // the zeros before the copy engine's writes
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  const int* sfl = reinterpret_cast<const int*>(sm + W::SF);
  if (warp >= W::NCW) {""")
sub("    // ---- producers: the prep warps prepare chunk c+1 while the consumers run chunk c; the load warp loads c+2.\n"
    "    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" ::\"n\"(W::REG_P));\n    const int ptid = tid - 32 * W::NCW;\n"
    "    const int pw = warp - W::NCW;\n    const bool loader = warp >= 16 - W::NLW;\n    if (loader) {\n"
    "      static_assert(W::NBUF == 3 && W::NBQK == 2",
    "    // ---- producers: the prep warps prepare chunk c+1 while the consumers run chunk c; lane 0 of the last one\n"
    "    // issues chunk c+2's TMA.\n"
    "    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" ::\"n\"(W::REG_P));\n    const int ptid = tid - 32 * W::NCW;\n"
    "    const int pw = warp - W::NCW;\n    const bool loader = warp >= 16 - W::NLW;\n    if (loader) {\n"
    "      static_assert(W::NBUF == 3 && W::NBQK == 2")
cut("    const bool loader = warp >= 16 - W::NLW;\n", "    return;\n  }\n\n  // ---- consumers:", after="gd_wsh_kernel(const __grid_constant__", new=r"""    const bool issuer = pw == W::NPW - 1;
    float gn = 0.f, bn = 0.f;  // the next chunk to store's gate and beta (lane t)
    if (issuer) {
      if (lane == 0) {
        wsh_tma_chunk(sm, &tq, &tk, &tv, 0, b, h);
        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
      }
      wsh_gb_load(gate, beta, b, h, T, H, 0, lane, gn, bn);
      wsh_gb_store(sm, 0, gn, bn, lane);
      if (1 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, 1, lane, gn, bn);
    }
    wsh_wait_chunk(sm, 0);
    producer_sync<W::NP>();  // chunk 0's gate and beta visible
    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    cta_sync();
    for (int ch = 0; ch < nchunks; ++ch) {
      if (ch + 1 < nchunks) {
        WSH_MARK(0, ch + 1);
        if (issuer) wsh_gb_store(sm, ch + 1, gn, bn, lane);
        wsh_wait_chunk(sm, ch + 1);
        producer_sync<W::NP>();  // chunk c+1's gate and beta visible
        WSH_MARK(6, ch + 1);
        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
      }
      WSH_MARK(5, ch + 1);
      cta_sync();  // chunk c consumed; chunk c+1 prepared
    }
""")
sub("""    const float* cur = sm + W::VB + (ch % W::NBUF) * W::VBUF;
    const float* vsm = cur + W::VR;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    if (!sfl[nb]) {
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
""", """    const float* cur = sm + W::GB + (ch % W::NBUF) * W::GBUF;
    const float* vsm = sm + W::VB + (ch % W::NBUF) * W::TILE;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    WSH_MARK(0, ch);
    wsh_wait_chunk(sm, ch);  // v's tile (the prep warps waited for it a chunk ago: this is for the memory model)
    WSH_MARK(8, ch);
    if (!sfl[nb]) {
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      wsh_vt_frags(vh, vl, vsm, cfs, j0, tig);
      WSH_MARK(1, ch);
""")
# consumer marks at v56's phase ends (probe56's places)
_k = src.index("gd_wsh_kernel(const __grid_constant__")
def ksub(old, new):
    global src
    i = src.index(old, _k)
    assert src.count(old, _k, _k + 20000) == 1, old[:80]
    src = src[:i] + new + src[i + len(old):]
ksub("      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores\n",
     "      WSH_MARK(2, ch);\n      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores\n")
ksub("      if (n == C) {\n        float* yr = yb + 2 * tig * rs + j0;\n",
     "      WSH_MARK(3, ch);\n      if (n == C) {\n        float* yr = yb + 2 * tig * rs + j0;\n")
ksub("      if (ch + 1 == nchunks) {\n        cta_sync();\n        break;  // the last chunk: no state after it\n      }\n",
     "      WSH_MARK(4, ch);\n      if (ch + 1 == nchunks) {\n        cta_sync();\n        break;  // the last chunk: no state after it\n      }\n")
ksub("      const float GC = gsc[C - 1];\n      const float rkc = sm[W::RK + nb * DP];\n",
     "      WSH_MARK(6, ch);\n      const float GC = gsc[C - 1];\n      const float rkc = sm[W::RK + nb * DP];\n")
ksub("    } else {\n      // Safe path: the plain fp32 recurrence", "      WSH_MARK(7, ch);\n    } else {\n      // Safe path: the plain fp32 recurrence")
ksub("        const float cv0 = bt * vsm[t * NCS + j0];\n        const float cv1 = bt * vsm[t * NCS + j0 + 8];\n",
     "        const float cv0 = bt * vsm[wsh_toff(t, j0)];\n        const float cv1 = bt * vsm[wsh_toff(t, j0 + 8)];\n")
ksub("    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n",
     "    WSH_MARK(5, ch + 1);\n    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n")

# ---- host: the tensor maps
sub("""void launch_wsh(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H) {
  const size_t smem = sizeof(float) * (size_t)WshCfg::TOTAL;
  C10_CUDA_CHECK(cudaFuncSetAttribute(gd_wsh_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  gd_wsh_kernel<<<B * H, 512, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta.data_ptr<float>(),
      y.data_ptr<float>(), T, H);""", """// A (B, T, H, 128) fp32 tensor as TMA boxes of 32 columns x 32 steps of one head, 128-byte swizzle.
CUtensorMap wsh_map(const torch::Tensor& x, int B, int T, int H) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {128, (cuuint64_t)H, (cuuint64_t)T, (cuuint64_t)B};
  const cuuint64_t strides[3] = {128 * 4, (cuuint64_t)H * 512, (cuuint64_t)T * H * 512};
  const cuuint32_t box[4] = {32, 1, 32, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, x.data_ptr<float>(), dims, strides,
                                            box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TORCH_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed: ", (int)r);
  return m;
}

void launch_wsh(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H) {
  const size_t smem = sizeof(float) * (size_t)WshCfg::TOTAL;
  C10_CUDA_CHECK(cudaFuncSetAttribute(gd_wsh_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const CUtensorMap tq = wsh_map(q, B, T, H), tk = wsh_map(k, B, T, H), tv = wsh_map(v, B, T, H);
  gd_wsh_kernel<<<B * H, 512, smem, at::cuda::getCurrentCUDAStream()>>>(
      tq, tk, tv, gate.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(), T, H);""")
sub("__device__ __forceinline__ void cta_sync()", "#define WSH_MARK(m, c)  // a probe's hook\n__device__ __forceinline__ void cta_sync()")
sub('extra_cuda_cflags=["-O3", "-lineinfo", "--ptxas-options=-v", "-gencode=arch=compute_90a,code=sm_90a"],',
    'extra_cuda_cflags=["-O3", "-lineinfo", "--ptxas-options=-v", "-gencode=arch=compute_90a,code=sm_90a"],\n'
    '    extra_ldflags=["-lcuda"],  # cuTensorMapEncodeTiled')
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v63_tma"').replace("sgd_v56_forward", "sgd_v63_forward")
(ROOT / ".gpu/v63_tma.py").write_text(src)
print("wrote .gpu/v63_tma.py")
