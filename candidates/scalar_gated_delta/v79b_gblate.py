# v79b_gblate: v79a_an64 (below) with the issuer's loads of chunk c+2's gate and beta after its TMA boxes
# instead of before them (the boxes' proxy fence no longer waits for them).
# v79a_an64: v76b_tma5d (below) with A as 8 m64n64k16 over [k hi | k lo] and q's pieces interleaved by
# step group, so that each thread of A holds both parts of its row (no hand-over between warps).
# v76b_tma5d: v74_async (below) with chunk c+2's gate and beta loaded at the prep's loop top, and q, k, v by one
# TMA box each a chunk (a 5D tensor map) instead of four
# v74_async: v69_sacc (below) with its wgmma left asynchronous by ptxas: K^T Vt waited inside its own branch
# (y's stores between its commit and wait), Q S0 in groups of one k step (its pieces fit the registers).
# v69_sacc: v68c_both (below) with the consumers' state kept in K^T Vt's accumulator, K^T Vt issued before y's stores.
# v68c_both: v67_iter (below) with v68a_apair's A and v68b_cpipe's consumer pipelining.
# v67_iter: v64_avt (below) with wgmma descriptors advanced by constants and the v tile's offsets hoisted.
# v64_avt: v63b_tma (below) with A Vt on fp16 wgmma: A' = A G_t / G_s as fp16 pieces by row from the prep
# warpgroup, K^T Vt's k as k / G_s, so one split of Vt'' = beta v on the consumers feeds both products.
# v63b_tma: v63_tma (below) with the gate / beta loads after the prep (away from its fences), the tensor maps
# prefetched, and no mbarrier wait on the consumers.
# v63_tma: v56_kuni (below) with, at D = 128, q, k and v loaded by tensor-map TMA (the load warp becomes an eighth
# prep warp) and the prep in two rounds on two warpgroups: q and k split by step, then A beside K^T Vt's k split.
# v56_kuni: v54_famat (below) with K^T Vt's k pieces under one scale a chunk (D = 128).
# v54_famat: v52_sep (below) with, at D = 128 and aligned inputs, every product but A Vt on fp16 wgmma (gd_wsh_kernel):
# each operand in two fp16 pieces under a power-of-two scale per row or column; A on a prep warpgroup.
# v52_sep: v51a_trim (below) with, at D = 64, q hi and K^T hi in arrays of their own, the gate scan and vote
# first, and the A tiles built from the raw inputs beside the other prep warps' split.
# v51a_trim: v49b_ystore_fourbuf (below) with chunk 0 without Q S0 and the last chunk without K^T Vt and the state update.
# v49b_ystore_fourbuf: v43_wsg (below) with the y stores of a full chunk without branches, G_t loaded ahead of A Vt, and at D = 64
# four input buffers (the load warp three chunks ahead).
# v43_wsg: v29a_wsg (below) with, at D = 128, the Vt^T fragments built before Q S0 and the prep warps' k split
# items starting where the q items' remainder ends (v42's code there: 601 us against v29a's 624); D = 64 runs
# v29a's code.
# v29a_wsg (scalar gates): v27_ws_wgmma with its warp-specialised wgmma kernel templated on the head size and
# run at D = 64 too (16-byte aligned inputs): one consumer warpgroup owns the 64 x 64 state and runs chunk c's
# wgmma and mma.sync work and writes y(c); 11 prep warps split, scan and build chunk c+1's A tiles; one warp issues
# chunk c+2's cp.async. D = 128 runs v27's kernel with the registers split 168 / 88 (v27: 192 / 64). sm_90a only.
# Seed and other D: the kernels of v27. v28 (session 19, same design, 2 load warps at D = 64): medium 74.9 us,
# v28b (one load warp) 73.4, v28c (168 / 88) large 623, v27 87.5 / 637 in the same run.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_pipeline.h>
#include <cuda_fp16.h>
#include <cuda.h>
#include <stdint.h>

namespace {

constexpr float kSafe = 1e-18f;
constexpr unsigned kFull = 0xffffffffu;

// Split x = hi + lo for 3xTF32 without cvt.rna (which sm_90 emulates with ~4 ALU-pipe instructions
// each, FSETP/IADD/SEL/LOP3: that emulation was v8's bottleneck).  The tensor core ignores the low 13
// bits of a .tf32 operand (truncation), so adding half a TF32 ulp to the bit pattern first gives round
// to nearest, ties away, exactly like cvt.rna: hi = (bits + 0x1000) & ~0x1fff (masked because x - hi
// must be formed exactly), lo = bits(x - hi) + 0x1000 (the mask is left to the hardware).
// 4 integer/float ops per split instead of ~9.
__device__ __forceinline__ void split(float x, uint32_t& hi, uint32_t& lo) {
  const uint32_t h = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  hi = h;
  lo = __float_as_uint(x - __uint_as_float(h)) + 0x1000u;
}

__device__ __forceinline__ void mma8(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a*b in split precision: small terms first, then hi*hi.
__device__ __forceinline__ void mma3(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4], uint32_t bh0,
                                     uint32_t bh1, uint32_t bl0, uint32_t bl1) {
  mma8(c, al, bh0, bh1);
  mma8(c, ah, bl0, bl1);
  mma8(c, ah, bh0, bh1);
}

// KH: number of slices of the i range (state rows of S, cols of S^T) over warps.  DP = 128: 2 (16 warps),
// DP = 64: 4 (16 warps instead of v8's 8, for latency hiding at the medium shape), DP = 32: 2 (4 warps).
template <int DP>
struct KHOf {
  static constexpr int value = DP == 64 ? 4 : 2;
};

template <int DP, bool CHAN>
struct Cfg {
  static constexpr int C = 32;            // chunk length (== warp size: the scalar gate scan is one warp)
  static constexpr int NC = DP;           // columns per CTA: the whole head
  static constexpr int MT = NC / 16;      // m-tiles of S^T rows
  static constexpr int KH = KHOf<DP>::value;
  static constexpr int NW = MT * KH;
  static constexpr int NT = NW * 32;
  static constexpr int IH = DP / KH;
  static constexpr int NI = IH / 8;       // 8-wide i tiles per warp
  static constexpr int NTT = C / 8;       // 8-wide t tiles
  static constexpr int NKS = C / 8;       // 8-deep s steps
  static constexpr int DPS = DP + 8;      // row strides chosen for conflict-free fragment loads
  static constexpr int NCS = NC + 8;
  static constexpr int CS = C + 4;
  static constexpr int NOS = NC + 4;
  static constexpr int KOFF = C * DPS;
  static constexpr int VOFF = 2 * C * DPS;
  static constexpr int GOFF = VOFF + C * NCS;
  static constexpr int BOFF = GOFF + (CHAN ? C * NCS : C);
  static constexpr int BUF = BOFF + (CHAN ? 0 : C);
  static constexpr int AM = 2 * BUF;            // 2 slices (k halves) of C x CS
  static constexpr int OB = AM + 2 * C * CS;    // KH slices of C x NOS
  static constexpr int GS = OB + KH * C * NOS;  // scalar G_t, double-buffered (read by the next chunk)
  static constexpr int QL = GS + 2 * C;            // lo parts of the current chunk's q (hi parts in place)
  static constexpr int KL = QL + C * DPS;       // lo parts of k
  static constexpr int TOTAL = KL + C * DPS;
  static_assert(DP == 32 || DP == 64 || DP == 128, "DP");
  static_assert(NI % 2 == 0, "K^T Vt works on pairs of i tiles");
  static_assert(NKS % KH == 0, "A Vt: s steps per i slice");
  static_assert(NT <= 512, "NT");
  static_assert(DPS % 32 == 8 && NCS % 32 == 8 && NOS % 32 == 4 && CS % 32 == 4, "strides");
  static_assert(OB % 4 == 0 && (C * NOS) % 4 == 0, "float4 y phase");
  // Output of chunk c written at the start of chunk c+1 (one barrier fewer per chunk).  Not for scalar gates at
  // DP = 128: there the extra live state made ptxas spill (32 bytes of stack at the 128-register cap).
  static constexpr bool DEFER = CHAN || DP != 128;
  static constexpr bool OPAQUE = CHAN && DP == 128;
  static_assert(BUF % 4 == 0 && KOFF % 4 == 0 && VOFF % 4 == 0 && GOFF % 4 == 0 && QL % 4 == 0 && KL % 4 == 0,
                "align");
};

template <int DP, bool CHAN, class Cf = Cfg<DP, CHAN>>
__device__ __forceinline__ void load_chunk(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                           const float* __restrict__ v, const float* __restrict__ gate,
                                           const float* __restrict__ beta, int b, int h, int T, int H, int D,
                                           int t0, int n, int tid, bool vec, bool full) {
  constexpr int NT = Cf::NT, DPS = Cf::DPS, NCS = Cf::NCS;
  float* qs = buf;
  float* ks = buf + Cf::KOFF;
  float* vs = buf + Cf::VOFF;
  float* gs = buf + Cf::GOFF;
  const long long rs = (long long)H * D;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * D;
  if (full) {
    // n == C, D == DP, 16-byte aligned, C * H * D < 2^31: compile-time item -> (t, e), 32-bit in-chunk offsets.
    constexpr int P4 = DP / 4;
    constexpr int NIT = (Cf::C * P4 + NT - 1) / NT;
    const float* qb = q + base;
    const float* kb = k + base;
    const float* vb = v + base;
    const int rsi = H * DP;
    int tidv = tid;
    // At the 128-register cap (channel, DP = 128) keep ptxas from hoisting the per-thread offsets out of the
    // chunk loop (that made it spill): recompute them from an opaque copy of tid (a few integer ops per chunk).
    if constexpr (Cf::OPAQUE) asm volatile("" : "+r"(tidv));
#pragma unroll
    for (int it = 0; it < NIT; ++it) {
      const int idx = tidv + it * NT;
      if ((Cf::C * P4) % NT == 0 || idx < Cf::C * P4) {
        const int t = idx / P4;
        const int e = (idx % P4) * 4;
        const int o = t * rsi + e;
        __pipeline_memcpy_async(qs + t * DPS + e, qb + o, 16);
        __pipeline_memcpy_async(ks + t * DPS + e, kb + o, 16);
        __pipeline_memcpy_async(vs + t * NCS + e, vb + o, 16);
        if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + e, gate + base + o, 16);
      }
    }
  } else if (vec) {
    const int pr = D >> 2;
    const int tot = n * pr;
    for (int idx = tid; idx < tot; idx += NT) {
      const int t = idx / pr;
      const int e = (idx - t * pr) << 2;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + t * DPS + e, q + o, 16);
      __pipeline_memcpy_async(ks + t * DPS + e, k + o, 16);
      __pipeline_memcpy_async(vs + t * NCS + e, v + o, 16);
      if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + e, gate + o, 16);
    }
  } else {
    const int tot = n * D;
    for (int idx = tid; idx < tot; idx += NT) {
      const int t = idx / D;
      const int e = idx - t * D;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + t * DPS + e, q + o, 4);
      __pipeline_memcpy_async(ks + t * DPS + e, k + o, 4);
      __pipeline_memcpy_async(vs + t * NCS + e, v + o, 4);
      if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + e, gate + o, 4);
    }
  }
  if constexpr (!CHAN) {
    float* bs = buf + Cf::BOFF;
    for (int t = tid; t < n; t += NT) {
      const long long o = ((long long)b * T + t0 + t) * H + h;
      __pipeline_memcpy_async(gs + t, gate + o, 4);
      __pipeline_memcpy_async(bs + t, beta + o, 4);
    }
  }
}

// Output of one chunk: y_t = (sum of the KH i-slice partials in ob) * G_t (no scale on the safe path).
// gsm: that chunk's (channel) cumulative gates, gsc: its scalar G_t.
template <int DP, bool CHAN, class Cf = Cfg<DP, CHAN>>
__device__ __forceinline__ void store_y(float* __restrict__ y, const float* ob, const float* gsm, const float* gsc,
                                        int b, int h, int T, int H, int D, int t0, int n, int safe, int tid,
                                        bool fast) {
  constexpr int C = Cf::C, NC = Cf::NC, NT = Cf::NT, KH = Cf::KH, NOS = Cf::NOS, NCS = Cf::NCS;
  const long long rs = (long long)H * D;
  if (fast) {
    // D == DP == NC, y 16-byte aligned, C * H * D < 2^31: float4 items, compile-time trip count; same summation
    // order and scaling as the generic loop below (bitwise identical results).
    constexpr int P4 = NC / 4;
    constexpr int NIT = (C * P4 + NT - 1) / NT;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    const int rsi = H * DP;
    int tidv = tid;
    if constexpr (Cf::OPAQUE) asm volatile("" : "+r"(tidv));  // see load_chunk
#pragma unroll
    for (int it = 0; it < NIT; ++it) {
      const int idx = tidv + it * NT;
      const int t = idx / P4;
      const int j = (idx % P4) * 4;
      if (((C * P4) % NT == 0 || idx < C * P4) && t < n) {
        float4 o = *reinterpret_cast<const float4*>(ob + t * NOS + j);
#pragma unroll
        for (int s2 = 1; s2 < KH; ++s2) {
          const float4 p = *reinterpret_cast<const float4*>(ob + s2 * C * NOS + t * NOS + j);
          o.x += p.x;
          o.y += p.y;
          o.z += p.z;
          o.w += p.w;
        }
        if (!safe) {
          if constexpr (CHAN) {
            const float4 g = *reinterpret_cast<const float4*>(gsm + t * NCS + j);
            o.x *= g.x;
            o.y *= g.y;
            o.z *= g.z;
            o.w *= g.w;
          } else {
            const float g = gsc[t];
            o.x *= g;
            o.y *= g;
            o.z *= g;
            o.w *= g;
          }
        }
        float* dst = yb + t * rsi + j;
        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "f"(o.x), "f"(o.y), "f"(o.z), "f"(o.w));
      }
    }
  } else {
    for (int idx = tid; idx < n * NC; idx += NT) {
      const int t = idx / NC;
      const int j = idx - t * NC;
      if (j < D) {
        float o = ob[t * NOS + j];
#pragma unroll
        for (int s2 = 1; s2 < KH; ++s2) o += ob[s2 * C * NOS + t * NOS + j];
        if (!safe) {
          if constexpr (CHAN) o *= gsm[t * NCS + j];
          else o *= gsc[t];
        }
        y[((long long)b * T + t0 + t) * rs + (long long)h * D + j] = o;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// v19: gd_tc_kernel's chunk loop pipelined over chunks (DP <= 64).  Per chunk c, two barrier phases instead of
// three: [A tiles and (channel) G, Vt of c; the output of c-1] | barrier | [O and the state update of c; then the
// split and gate scan of c+1] | barrier (with the vote of c+1).  A warp done with c's MMAs goes on to c+1 without
// waiting for the others.  Three input buffers (c in use, c+1 split in place, c+2 landing), two of the lo parts.
// Every arithmetic operation and its order are v13's, so the outputs are bitwise v13's.
template <int DP, bool CHAN>
struct PCfg {
  using B = Cfg<DP, CHAN>;
  static constexpr int NBUF = 3;
  static constexpr int AM = NBUF * B::BUF;
  static constexpr int OB = AM + 2 * B::C * B::CS;
  static constexpr int GS = OB + B::KH * B::C * B::NOS;
  static constexpr int QL = GS + 2 * B::C;
  static constexpr int KL = QL + 2 * B::C * B::DPS;
  static constexpr int TOTAL = KL + 2 * B::C * B::DPS;
  static_assert(AM % 4 == 0 && OB % 4 == 0 && QL % 4 == 0 && KL % 4 == 0, "align");
};

// q and k of one chunk: hi (rounded, masked) in place, lo (bits + half ulp) in qlo / klo (v13's split phase).
template <int DP, bool CHAN, class Cf = Cfg<DP, CHAN>>
__device__ __forceinline__ void split_qk(float* buf, float* qlo, float* klo, int tid) {
  constexpr int C = Cf::C, NT = Cf::NT, DPS = Cf::DPS;
  constexpr int P4 = DP / 4;
  constexpr int NIT = (2 * C * P4) / NT;
  static_assert((2 * C * P4) % NT == 0, "split items");
  float* qs = buf;
  float* ksm = buf + Cf::KOFF;
#pragma unroll
  for (int it = 0; it < NIT; ++it) {
    const int idx = tid + it * NT;
    const int arr = idx / (C * P4);
    const int r = idx - arr * (C * P4);
    const int t = r / P4;
    const int e = (r - t * P4) * 4;
    float* hp = (arr ? ksm : qs) + t * DPS + e;
    float* lp = (arr ? klo : qlo) + t * DPS + e;
    const float4 x = *reinterpret_cast<const float4*>(hp);
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(x.x, h0, l0);
    split(x.y, h1, l1);
    split(x.z, h2, l2);
    split(x.w, h3, l3);
    *reinterpret_cast<uint4*>(hp) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(lp) = make_uint4(l0, l1, l2, l3);
  }
}

// v13's gate scan of one chunk; returns this thread's safe-path vote.  Scalar: GC (the chunk's gate product), cf
// (beta_s / G_s of step s = lane) and G_t into gsc_out (warp 0).  Channel: gv (inclusive products of this thread's
// 8 steps of column sj) and excl (the product before them).
template <int DP, bool CHAN>
__device__ __forceinline__ int scan_gates(const float* buf, float* gsc_out, int n, int D, int tid, int lane, int warp,
                                          float& GC, float& cf, float& excl, float (&gv)[8]) {
  using Cf = Cfg<DP, CHAN>;
  constexpr int NCS = Cf::NCS;
  const float* gsm = buf + Cf::GOFF;
  int pred = 0;
  GC = 1.f;
  cf = 0.f;
  excl = 1.f;
  if constexpr (CHAN) {
    const int sj = tid >> 2;
    const int sseg = tid & 3;
    float p = 1.f;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int t = sseg * 8 + u;
      const float g = (t < n && sj < D) ? gsm[t * NCS + sj] : 1.f;
      p *= g;
      gv[u] = p;
    }
    float incl = p;
    float o = __shfl_up_sync(kFull, incl, 1, 4);
    if (sseg >= 1) incl *= o;
    o = __shfl_up_sync(kFull, incl, 2, 4);
    if (sseg >= 2) incl *= o;
    excl = __shfl_up_sync(kFull, incl, 1, 4);
    if (sseg == 0) excl = 1.f;
    const float tot = __shfl_sync(kFull, incl, 3, 4);
    pred = !(tot >= kSafe);
  } else {
    const float* bsm = buf + Cf::BOFF;
    float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float o = __shfl_up_sync(kFull, G, off);
      if (lane >= off) G *= o;
    }
    GC = __shfl_sync(kFull, G, 31);
    pred = !(GC >= kSafe);
    if (!pred) cf = (lane < n) ? bsm[lane] / G : 0.f;
    if (warp == 0) gsc_out[lane] = G;
  }
  return pred;
}

template <int DP, bool CHAN>
__global__ void __launch_bounds__(Cfg<DP, CHAN>::NT, 1)
gd_pipe_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
               const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H,
               int D, bool vec, bool fast) {
  using Cf = Cfg<DP, CHAN>;
  using Pf = PCfg<DP, CHAN>;
  constexpr int C = Cf::C, NC = Cf::NC, MT = Cf::MT, NW = Cf::NW, NT = Cf::NT, IH = Cf::IH, NI = Cf::NI;
  constexpr int KH = Cf::KH;
  constexpr int NTT = Cf::NTT, NKS = Cf::NKS, DPS = Cf::DPS, NCS = Cf::NCS, CS = Cf::CS, NOS = Cf::NOS;
  constexpr int BUF = Cf::BUF;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2;
  const int tig = lane & 3;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;

  for (int i = tid; i < Pf::TOTAL; i += NT) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  load_chunk<DP, CHAN>(sm, q, k, v, gate, beta, b, h, T, H, D, 0, min(C, T), tid, vec, fast && T >= C);
  __pipeline_commit();
  if (nchunks > 1)
    load_chunk<DP, CHAN>(sm + BUF, q, k, v, gate, beta, b, h, T, H, D, C, min(C, T - C), tid, vec,
                         fast && T - C >= C);
  __pipeline_commit();

  const int mt = warp % MT;
  const int kh = warp / MT;
  const int j0 = 16 * mt + gid;
  const int ibase = kh * IH;
  const int sj = tid >> 2;
  const int sseg = tid & 3;
  float* am = sm + Pf::AM;
  float* ob = sm + Pf::OB;
  float* gsc = sm + Pf::GS;
  float* obw = ob + kh * C * NOS;

  float S[NI][4];  // S^T tile kk: (j0, i), (j0, i+1), (j0+8, i), (j0+8, i+1), i = ibase + 8 kk + 2 tig
#pragma unroll
  for (int kk = 0; kk < NI; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;

  // Chunk 0's split and scan; from then on chunk c+1's run in chunk c's second phase.
  float GCs = 1.f, cfc = 0.f, exclc = 1.f;
  float gvc[8];
  __pipeline_wait_prior(1);
  __syncthreads();
  split_qk<DP, CHAN>(sm, sm + Pf::QL, sm + Pf::KL, tid);
  int safe = __syncthreads_or(scan_gates<DP, CHAN>(sm, gsc, min(C, T), D, tid, lane, warp, GCs, cfc, exclc, gvc));
  int psafe = 0;
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    float* cur = sm + (ch % 3) * BUF;
    float* qs = cur;
    float* ksm = cur + Cf::KOFF;
    float* vsm = cur + Cf::VOFF;
    float* gsm = cur + Cf::GOFF;
    const float* bsm = cur + Cf::BOFF;
    const float* ql = sm + Pf::QL + (ch & 1) * C * DPS;
    const float* kl = sm + Pf::KL + (ch & 1) * C * DPS;

    // ---- phase 1: A = causal(Q K^T) and (channel) G, Vt of this chunk; the previous chunk's output
    if (!safe) {
      for (int item = warp; item < 12; item += NW) {
        const int tau = item >> 1;
        const int half = item & 1;
        const int mtA = tau < 2 ? 0 : 1;
        const int ns = tau < 2 ? tau : tau - 2;
        float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int kk = 0; kk < DP / 16; ++kk) {
          const int i = half * (DP / 2) + 8 * kk + 2 * tig;
          const int oa = (16 * mtA + gid) * DPS + i;
          const int obb = (16 * mtA + gid + 8) * DPS + i;
          const int okk = (8 * ns + gid) * DPS + i;
          const uint2 qah = *reinterpret_cast<const uint2*>(qs + oa);
          const uint2 qal = *reinterpret_cast<const uint2*>(ql + oa);
          const uint2 qbh = *reinterpret_cast<const uint2*>(qs + obb);
          const uint2 qbl = *reinterpret_cast<const uint2*>(ql + obb);
          const uint2 kbh = *reinterpret_cast<const uint2*>(ksm + okk);
          const uint2 kbl = *reinterpret_cast<const uint2*>(kl + okk);
          const uint32_t ah[4] = {qah.x, qbh.x, qah.y, qbh.y};
          const uint32_t al[4] = {qal.x, qbl.x, qal.y, qbl.y};
          mma8(aL[kk & 1], al, kbh.x, kbh.y);
          mma8(aL[kk & 1], ah, kbl.x, kbl.y);
          mma8(aH[kk & 1], ah, kbh.x, kbh.y);
        }
        float acc[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
        float* amh = am + half * C * CS;
        const int t = 16 * mtA + gid;
        const int s = 8 * ns + 2 * tig;
        amh[t * CS + s] = (s <= t) ? acc[0] : 0.f;
        amh[t * CS + s + 1] = (s + 1 <= t) ? acc[1] : 0.f;
        amh[(t + 8) * CS + s] = (s <= t + 8) ? acc[2] : 0.f;
        amh[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? acc[3] : 0.f;
      }
      if constexpr (CHAN) {
        // In place: gate -> G (cumulative), v -> v / G (0 beyond the chunk end).
        if (sj < NC) {
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            const int t = sseg * 8 + u;
            if (t < n) {
              const float G = exclc * gvc[u];
              gsm[t * NCS + sj] = G;
              vsm[t * NCS + sj] = vsm[t * NCS + sj] / G;
            } else {
              vsm[t * NCS + sj] = 0.f;
            }
          }
        }
      }
    }
    if (ch > 0)
      store_y<DP, CHAN>(y, ob, sm + ((ch + 2) % 3) * BUF + Cf::GOFF, gsc + ((ch - 1) & 1) * C, b, h, T, H, D, t0 - C,
                        C, psafe, tid, fast);
    __pipeline_wait_prior(0);
    __syncthreads();  // A (and G, Vt) visible; ob read; chunk c+1's inputs landed; chunk c-1's buffer free
    if (ch + 2 < nchunks)
      load_chunk<DP, CHAN>(sm + ((ch + 2) % 3) * BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + 2 * C,
                           min(C, T - t0 - 2 * C), tid, vec, fast && T - t0 - 2 * C >= C);
    __pipeline_commit();

    // ---- phase 2: O and the state update of this chunk (v13's, verbatim)
    if (!safe) {
      float GC0 = GCs, GC1 = GCs;
      if constexpr (CHAN) {
        GC0 = gsm[(n - 1) * NCS + j0];
        GC1 = gsm[(n - 1) * NCS + j0 + 8];
      }
      uint32_t vh[NKS][4], vl[NKS][4];
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        const int s0 = 8 * ks + tig;
        float x0 = vsm[s0 * NCS + j0];
        float x1 = vsm[s0 * NCS + j0 + 8];
        float x2 = vsm[(s0 + 4) * NCS + j0];
        float x3 = vsm[(s0 + 4) * NCS + j0 + 8];
        if constexpr (!CHAN) {
          const float ca = __shfl_sync(kFull, cfc, s0);
          const float cb = __shfl_sync(kFull, cfc, s0 + 4);
          x0 *= ca;
          x1 *= ca;
          x2 *= cb;
          x3 *= cb;
        }
        split(x0, vh[ks][0], vl[ks][0]);
        split(x1, vh[ks][1], vl[ks][1]);
        split(x2, vh[ks][2], vl[ks][2]);
        split(x3, vh[ks][3], vl[ks][3]);
      }
      float O[NTT][4];
#pragma unroll
      for (int nt = 0; nt < NTT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < NI; ++kk) {
        uint32_t ah[4], al[4];
        split(S[kk][0], ah[0], al[0]);
        split(S[kk][2], ah[1], al[1]);
        split(S[kk][1], ah[2], al[2]);
        split(S[kk][3], ah[3], al[3]);
        const int i = ibase + 8 * kk + 2 * tig;
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          const int oq = (8 * nt + gid) * DPS + i;
          const uint2 qh = *reinterpret_cast<const uint2*>(qs + oq);
          const uint2 qlo = *reinterpret_cast<const uint2*>(ql + oq);
          mma3(O[nt], ah, al, qh.x, qh.y, qlo.x, qlo.y);
        }
      }
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        if (ks / (NKS / KH) != kh) continue;
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          if (nt < ks) continue;
          const int ta = (8 * nt + gid) * CS + 8 * ks + tig;
          const float b0 = am[ta] + am[C * CS + ta];
          const float b1 = am[ta + 4] + am[C * CS + ta + 4];
          uint32_t bh0, bl0, bh1, bl1;
          split(b0, bh0, bl0);
          split(b1, bh1, bl1);
          mma3(O[nt], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
        }
      }
#pragma unroll
      for (int nt = 0; nt < NTT; ++nt) {
        const int t = 8 * nt + 2 * tig;
        obw[t * NOS + j0] = O[nt][0];
        obw[(t + 1) * NOS + j0] = O[nt][1];
        obw[t * NOS + j0 + 8] = O[nt][2];
        obw[(t + 1) * NOS + j0 + 8] = O[nt][3];
      }
#pragma unroll
      for (int kp = 0; kp < NI; kp += 2) {
        float acc[2][2][4];
#pragma unroll
        for (int u = 0; u < 2; ++u)
#pragma unroll
          for (int w = 0; w < 2; ++w)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[u][w][e] = 0.f;
#pragma unroll
        for (int ks = 0; ks < NKS; ++ks) {
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int i = ibase + 8 * (kp + u) + gid;
            const int o0 = (8 * ks + tig) * DPS + i;
            const int o1 = o0 + 4 * DPS;
            const uint32_t bh0 = __float_as_uint(ksm[o0]);
            const uint32_t bh1 = __float_as_uint(ksm[o1]);
            const uint32_t bl0 = __float_as_uint(kl[o0]);
            const uint32_t bl1 = __float_as_uint(kl[o1]);
            mma3(acc[u][ks & 1], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
          }
        }
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int kk = kp + u;
          S[kk][0] = (S[kk][0] + (acc[u][0][0] + acc[u][1][0])) * GC0;
          S[kk][1] = (S[kk][1] + (acc[u][0][1] + acc[u][1][1])) * GC0;
          S[kk][2] = (S[kk][2] + (acc[u][0][2] + acc[u][1][2])) * GC1;
          S[kk][3] = (S[kk][3] + (acc[u][0][3] + acc[u][1][3])) * GC1;
        }
      }
    } else {
      // Safe path (v13's): plain fp32 recurrence on the exact inputs x = hi + (lo - half ulp).
      for (int t = 0; t < n; ++t) {
        float g0, g1, cv0, cv1;
        if constexpr (CHAN) {
          g0 = gsm[t * NCS + j0];
          g1 = gsm[t * NCS + j0 + 8];
          cv0 = vsm[t * NCS + j0];
          cv1 = vsm[t * NCS + j0 + 8];
        } else {
          g0 = gsm[t];
          g1 = g0;
          const float bt = bsm[t];
          cv0 = bt * vsm[t * NCS + j0];
          cv1 = bt * vsm[t * NCS + j0 + 8];
        }
        float p0 = 0.f, p1 = 0.f;
#pragma unroll
        for (int kk = 0; kk < NI; ++kk) {
          const int i = ibase + 8 * kk + 2 * tig;
          const float2 kh2 = *reinterpret_cast<const float2*>(ksm + t * DPS + i);
          const uint2 kl2 = *reinterpret_cast<const uint2*>(kl + t * DPS + i);
          const float2 qh2 = *reinterpret_cast<const float2*>(qs + t * DPS + i);
          const uint2 ql2 = *reinterpret_cast<const uint2*>(ql + t * DPS + i);
          const float kx = kh2.x + __uint_as_float(kl2.x - 0x1000u);
          const float ky = kh2.y + __uint_as_float(kl2.y - 0x1000u);
          const float qx = qh2.x + __uint_as_float(ql2.x - 0x1000u);
          const float qy = qh2.y + __uint_as_float(ql2.y - 0x1000u);
          S[kk][0] = fmaf(cv0, kx, S[kk][0] * g0);
          S[kk][1] = fmaf(cv0, ky, S[kk][1] * g0);
          S[kk][2] = fmaf(cv1, kx, S[kk][2] * g1);
          S[kk][3] = fmaf(cv1, ky, S[kk][3] * g1);
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
          obw[t * NOS + j0] = p0;
          obw[t * NOS + j0 + 8] = p1;
        }
      }
    }

    // ---- the next chunk's split and gate scan (its inputs landed before the barrier above)
    int predn = 0;
    if (ch + 1 < nchunks) {
      float* nxt = sm + ((ch + 1) % 3) * BUF;
      const int nb = (ch + 1) & 1;
      split_qk<DP, CHAN>(nxt, sm + Pf::QL + nb * C * DPS, sm + Pf::KL + nb * C * DPS, tid);
      predn = scan_gates<DP, CHAN>(nxt, gsc + nb * C, min(C, T - t0 - C), D, tid, lane, warp, GCs, cfc, exclc, gvc);
    }
    psafe = safe;
    safe = __syncthreads_or(predn);  // ob complete; the next chunk's split, G_t and vote visible
  }
  const int lt0 = (nchunks - 1) * C;
  store_y<DP, CHAN>(y, ob, sm + ((nchunks - 1) % 3) * BUF + Cf::GOFF, gsc + ((nchunks - 1) & 1) * C, b, h, T, H, D,
                    lt0, T - lt0, psafe, tid, fast);
}

template <int DP, bool CHAN>
void launch_pipe(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                 const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H, int D) {
  using Cf = Cfg<DP, CHAN>;
  const size_t smem = sizeof(float) * (size_t)PCfg<DP, CHAN>::TOTAL;
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CHAN) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  const bool vec = (D % 4 == 0) && (al % 16 == 0);
  const bool fast = vec && D == DP && (reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0) &&
                    (long long)Cf::C * H * D < (1LL << 31);
  auto kern = gd_pipe_kernel<DP, CHAN>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H, Cf::NT, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D, vec, fast);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// v20: the chunkwise tensor-core kernel with warp specialisation at DP = 64.  Of 16 warps, 8 consumers own S^T
// (4 m-tiles x 2 i slices) and run chunk c's MMAs and state update while 8 producers write chunk c-1's output,
// then split and scan chunk c+1 (vote by a 256-thread barrier), build its A tiles (and, channel, G and Vt in
// place) and issue chunk c+2's loads.  One CTA barrier per chunk hands everything over.  Double buffers for the
// lo parts, A, the O partials, G_t, beta/G and the safe flag; three input buffers.
template <bool CHAN>
struct WCfg : Cfg<64, CHAN> {
  using B = Cfg<64, CHAN>;
  static constexpr int NT = 256;  // threads per role (producers, consumers)
  static constexpr int KH = 2;    // consumers' i slices
  static constexpr int IH = 64 / KH;
  static constexpr int NI = IH / 8;
  static constexpr bool OPAQUE = false;
  static constexpr int QL = 3 * B::BUF;
  static constexpr int KL = QL + 2 * B::C * B::DPS;
  static constexpr int AM = KL + 2 * B::C * B::DPS;     // 2 chunks x 2 k halves of C x CS
  static constexpr int OB = AM + 4 * B::C * B::CS;      // 2 chunks x KH slices of C x NOS
  static constexpr int GS = OB + 2 * KH * B::C * B::NOS;  // scalar G_t, 2 chunks
  static constexpr int CF = GS + 2 * B::C;              // scalar beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * B::C;              // safe flags, 2 chunks
  static constexpr int TOTAL = SF + 4;
  static_assert(QL % 4 == 0 && KL % 4 == 0 && AM % 4 == 0 && OB % 4 == 0 && GS % 4 == 0, "align");
};

__device__ __forceinline__ void producers_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

__device__ __forceinline__ int producers_vote(int pred) {
  int r;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.s32 p, %1, 0;\n bar.red.or.pred q, 1, 256, p;\n selp.s32 %0, 1, 0, q;\n}"
      : "=r"(r)
      : "r"(pred)
      : "memory");
  return r;
}

// Producers: chunk c's inputs landed and are visible; split q/k, scan the gates, vote, then A tiles and (channel)
// G and Vt in place unless the chunk takes the safe path.
template <bool CHAN>
__device__ __forceinline__ void ws_prepare(float* sm, int c, int n, int D, int ptid, int lane, int pw, int gid,
                                           int tig) {
  using Cf = Cfg<64, CHAN>;
  using Wf = WCfg<CHAN>;
  constexpr int C = Cf::C, DP = 64, DPS = Cf::DPS, NCS = Cf::NCS, CS = Cf::CS, NC = Cf::NC;
  float* buf = sm + (c % 3) * Cf::BUF;
  const int nb = c & 1;
  float* qlo = sm + Wf::QL + nb * C * DPS;
  float* klo = sm + Wf::KL + nb * C * DPS;
  split_qk<DP, CHAN, Wf>(buf, qlo, klo, ptid);
  float GC, cf, excl;
  float gv[8];
  const int pred = scan_gates<DP, CHAN>(buf, sm + Wf::GS + nb * C, n, D, ptid, lane, pw, GC, cf, excl, gv);
  if (!CHAN && pw == 0) sm[Wf::CF + nb * C + lane] = cf;
  const int safe = producers_vote(pred);  // also: every producer's split is visible
  if (ptid == 0) reinterpret_cast<int*>(sm + Wf::SF)[nb] = safe;
  if (safe) return;
  const float* qs = buf;
  const float* ksm = buf + Cf::KOFF;
  float* am = sm + Wf::AM + nb * 2 * C * CS;
  for (int item = pw; item < 12; item += 8) {
    const int tau = item >> 1;
    const int half = item & 1;
    const int mtA = tau < 2 ? 0 : 1;
    const int ns = tau < 2 ? tau : tau - 2;
    float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int kk = 0; kk < DP / 16; ++kk) {
      const int i = half * (DP / 2) + 8 * kk + 2 * tig;
      const int oa = (16 * mtA + gid) * DPS + i;
      const int obb = (16 * mtA + gid + 8) * DPS + i;
      const int okk = (8 * ns + gid) * DPS + i;
      const uint2 qah = *reinterpret_cast<const uint2*>(qs + oa);
      const uint2 qal = *reinterpret_cast<const uint2*>(qlo + oa);
      const uint2 qbh = *reinterpret_cast<const uint2*>(qs + obb);
      const uint2 qbl = *reinterpret_cast<const uint2*>(qlo + obb);
      const uint2 kbh = *reinterpret_cast<const uint2*>(ksm + okk);
      const uint2 kbl = *reinterpret_cast<const uint2*>(klo + okk);
      const uint32_t ah[4] = {qah.x, qbh.x, qah.y, qbh.y};
      const uint32_t al[4] = {qal.x, qbl.x, qal.y, qbl.y};
      mma8(aL[kk & 1], al, kbh.x, kbh.y);
      mma8(aL[kk & 1], ah, kbl.x, kbl.y);
      mma8(aH[kk & 1], ah, kbh.x, kbh.y);
    }
    float acc[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
    float* amh = am + half * C * CS;
    const int t = 16 * mtA + gid;
    const int s = 8 * ns + 2 * tig;
    amh[t * CS + s] = (s <= t) ? acc[0] : 0.f;
    amh[t * CS + s + 1] = (s + 1 <= t) ? acc[1] : 0.f;
    amh[(t + 8) * CS + s] = (s <= t + 8) ? acc[2] : 0.f;
    amh[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? acc[3] : 0.f;
  }
  if constexpr (CHAN) {
    const int sj = ptid >> 2;
    const int sseg = ptid & 3;
    float* gsm = buf + Cf::GOFF;
    float* vsm = buf + Cf::VOFF;
    if (sj < NC) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int t = sseg * 8 + u;
        if (t < n) {
          const float G = excl * gv[u];
          gsm[t * NCS + sj] = G;
          vsm[t * NCS + sj] = vsm[t * NCS + sj] / G;
        } else {
          vsm[t * NCS + sj] = 0.f;
        }
      }
    }
  }
}

template <bool CHAN>
__global__ void __launch_bounds__(512, 1)
gd_ws_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
             const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H,
             int D, bool vec, bool fast) {
  using Cf = Cfg<64, CHAN>;
  using Wf = WCfg<CHAN>;
  constexpr int C = Cf::C, DP = 64, KH = Wf::KH, IH = Wf::IH, NI = Wf::NI;
  constexpr int NTT = Cf::NTT, NKS = Cf::NKS, DPS = Cf::DPS, NCS = Cf::NCS, CS = Cf::CS, NOS = Cf::NOS;
  constexpr int BUF = Cf::BUF;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2;
  const int tig = lane & 3;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;
  const bool producer = warp >= 8;
  const int ptid = tid - 256;
  const int pw = warp - 8;

  for (int i = tid; i < Wf::TOTAL; i += 512) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  const int* sfl = reinterpret_cast<const int*>(sm + Wf::SF);
  float* gsc = sm + Wf::GS;
  if (producer) {
    load_chunk<DP, CHAN, Wf>(sm, q, k, v, gate, beta, b, h, T, H, D, 0, min(C, T), ptid, vec, fast && T >= C);
    __pipeline_commit();
    if (nchunks > 1)
      load_chunk<DP, CHAN, Wf>(sm + BUF, q, k, v, gate, beta, b, h, T, H, D, C, min(C, T - C), ptid, vec,
                               fast && T - C >= C);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    producers_sync();
    ws_prepare<CHAN>(sm, 0, min(C, T), D, ptid, lane, pw, gid, tig);
  }

  const int mt = warp % 4;
  const int kh = (warp / 4) & 1;
  const int j0 = 16 * mt + gid;
  const int ibase = kh * IH;
  float S[NI][4];  // consumers: S^T tile kk: (j0, i), (j0, i+1), (j0+8, i), (j0+8, i+1), i = ibase + 8 kk + 2 tig
#pragma unroll
  for (int kk = 0; kk < NI; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;
  __syncthreads();

  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    if (producer) {
      if (ch > 0) {
        const int pb = nb ^ 1;
        store_y<DP, CHAN, Wf>(y, sm + Wf::OB + pb * KH * C * NOS, sm + ((ch + 2) % 3) * BUF + Cf::GOFF, gsc + pb * C,
                              b, h, T, H, D, t0 - C, C, sfl[pb], ptid, fast);
      }
      if (ch + 1 < nchunks) {
        __pipeline_wait_prior(0);
        producers_sync();  // every producer past the output (chunk c-1's buffer free); chunk c+1's inputs visible
        if (ch + 2 < nchunks)
          load_chunk<DP, CHAN, Wf>(sm + ((ch + 2) % 3) * BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + 2 * C,
                                   min(C, T - t0 - 2 * C), ptid, vec, fast && T - t0 - 2 * C >= C);
        __pipeline_commit();
        ws_prepare<CHAN>(sm, ch + 1, min(C, T - t0 - C), D, ptid, lane, pw, gid, tig);
      }
    } else {
      const float* cur = sm + (ch % 3) * BUF;
      const float* qs = cur;
      const float* ksm = cur + Cf::KOFF;
      const float* vsm = cur + Cf::VOFF;
      const float* gsm = cur + Cf::GOFF;
      const float* bsm = cur + Cf::BOFF;
      const float* ql = sm + Wf::QL + nb * C * DPS;
      const float* kl = sm + Wf::KL + nb * C * DPS;
      const float* am = sm + Wf::AM + nb * 2 * C * CS;
      const float* cfs = sm + Wf::CF + nb * C;
      float* obw = sm + Wf::OB + nb * KH * C * NOS + kh * C * NOS;
      if (!sfl[nb]) {
        float GC0, GC1;
        if constexpr (CHAN) {
          GC0 = gsm[(n - 1) * NCS + j0];
          GC1 = gsm[(n - 1) * NCS + j0 + 8];
        } else {
          GC0 = gsc[nb * C + 31];
          GC1 = GC0;
        }
        uint32_t vh[NKS][4], vl[NKS][4];
#pragma unroll
        for (int ks = 0; ks < NKS; ++ks) {
          const int s0 = 8 * ks + tig;
          float x0 = vsm[s0 * NCS + j0];
          float x1 = vsm[s0 * NCS + j0 + 8];
          float x2 = vsm[(s0 + 4) * NCS + j0];
          float x3 = vsm[(s0 + 4) * NCS + j0 + 8];
          if constexpr (!CHAN) {
            const float ca = cfs[s0];
            const float cb = cfs[s0 + 4];
            x0 *= ca;
            x1 *= ca;
            x2 *= cb;
            x3 *= cb;
          }
          split(x0, vh[ks][0], vl[ks][0]);
          split(x1, vh[ks][1], vl[ks][1]);
          split(x2, vh[ks][2], vl[ks][2]);
          split(x3, vh[ks][3], vl[ks][3]);
        }
        float O[NTT][4];
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < NI; ++kk) {
          uint32_t ah[4], al[4];
          split(S[kk][0], ah[0], al[0]);
          split(S[kk][2], ah[1], al[1]);
          split(S[kk][1], ah[2], al[2]);
          split(S[kk][3], ah[3], al[3]);
          const int i = ibase + 8 * kk + 2 * tig;
#pragma unroll
          for (int nt = 0; nt < NTT; ++nt) {
            const int oq = (8 * nt + gid) * DPS + i;
            const uint2 qh = *reinterpret_cast<const uint2*>(qs + oq);
            const uint2 qlo = *reinterpret_cast<const uint2*>(ql + oq);
            mma3(O[nt], ah, al, qh.x, qh.y, qlo.x, qlo.y);
          }
        }
#pragma unroll
        for (int ks = 0; ks < NKS; ++ks) {
          if (ks / (NKS / KH) != kh) continue;
#pragma unroll
          for (int nt = 0; nt < NTT; ++nt) {
            if (nt < ks) continue;
            const int ta = (8 * nt + gid) * CS + 8 * ks + tig;
            const float b0 = am[ta] + am[C * CS + ta];
            const float b1 = am[ta + 4] + am[C * CS + ta + 4];
            uint32_t bh0, bl0, bh1, bl1;
            split(b0, bh0, bl0);
            split(b1, bh1, bl1);
            mma3(O[nt], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
          }
        }
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          const int t = 8 * nt + 2 * tig;
          obw[t * NOS + j0] = O[nt][0];
          obw[(t + 1) * NOS + j0] = O[nt][1];
          obw[t * NOS + j0 + 8] = O[nt][2];
          obw[(t + 1) * NOS + j0 + 8] = O[nt][3];
        }
#pragma unroll
        for (int kp = 0; kp < NI; kp += 2) {
          float acc[2][2][4];
#pragma unroll
          for (int u = 0; u < 2; ++u)
#pragma unroll
            for (int w = 0; w < 2; ++w)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[u][w][e] = 0.f;
#pragma unroll
          for (int ks = 0; ks < NKS; ++ks) {
#pragma unroll
            for (int u = 0; u < 2; ++u) {
              const int i = ibase + 8 * (kp + u) + gid;
              const int o0 = (8 * ks + tig) * DPS + i;
              const int o1 = o0 + 4 * DPS;
              const uint32_t bh0 = __float_as_uint(ksm[o0]);
              const uint32_t bh1 = __float_as_uint(ksm[o1]);
              const uint32_t bl0 = __float_as_uint(kl[o0]);
              const uint32_t bl1 = __float_as_uint(kl[o1]);
              mma3(acc[u][ks & 1], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
            }
          }
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int kk = kp + u;
            S[kk][0] = (S[kk][0] + (acc[u][0][0] + acc[u][1][0])) * GC0;
            S[kk][1] = (S[kk][1] + (acc[u][0][1] + acc[u][1][1])) * GC0;
            S[kk][2] = (S[kk][2] + (acc[u][0][2] + acc[u][1][2])) * GC1;
            S[kk][3] = (S[kk][3] + (acc[u][0][3] + acc[u][1][3])) * GC1;
          }
        }
      } else {
        for (int t = 0; t < n; ++t) {
          float g0, g1, cv0, cv1;
          if constexpr (CHAN) {
            g0 = gsm[t * NCS + j0];
            g1 = gsm[t * NCS + j0 + 8];
            cv0 = vsm[t * NCS + j0];
            cv1 = vsm[t * NCS + j0 + 8];
          } else {
            g0 = gsm[t];
            g1 = g0;
            const float bt = bsm[t];
            cv0 = bt * vsm[t * NCS + j0];
            cv1 = bt * vsm[t * NCS + j0 + 8];
          }
          float p0 = 0.f, p1 = 0.f;
#pragma unroll
          for (int kk = 0; kk < NI; ++kk) {
            const int i = ibase + 8 * kk + 2 * tig;
            const float2 kh2 = *reinterpret_cast<const float2*>(ksm + t * DPS + i);
            const uint2 kl2 = *reinterpret_cast<const uint2*>(kl + t * DPS + i);
            const float2 qh2 = *reinterpret_cast<const float2*>(qs + t * DPS + i);
            const uint2 ql2 = *reinterpret_cast<const uint2*>(ql + t * DPS + i);
            const float kx = kh2.x + __uint_as_float(kl2.x - 0x1000u);
            const float ky = kh2.y + __uint_as_float(kl2.y - 0x1000u);
            const float qx = qh2.x + __uint_as_float(ql2.x - 0x1000u);
            const float qy = qh2.y + __uint_as_float(ql2.y - 0x1000u);
            S[kk][0] = fmaf(cv0, kx, S[kk][0] * g0);
            S[kk][1] = fmaf(cv0, ky, S[kk][1] * g0);
            S[kk][2] = fmaf(cv1, kx, S[kk][2] * g1);
            S[kk][3] = fmaf(cv1, ky, S[kk][3] * g1);
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
            obw[t * NOS + j0] = p0;
            obw[t * NOS + j0 + 8] = p1;
          }
        }
      }
    }
    __syncthreads();  // chunk c's partials written; chunk c+1 prepared
  }
  if (producer) {
    const int lt0 = (nchunks - 1) * C;
    const int lb = (nchunks - 1) & 1;
    store_y<DP, CHAN, Wf>(y, sm + Wf::OB + lb * KH * C * NOS, sm + ((nchunks - 1) % 3) * BUF + Cf::GOFF, gsc + lb * C,
                          b, h, T, H, D, lt0, T - lt0, sfl[lb], ptid, fast);
  }
}

template <bool CHAN>
void launch_ws(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
               const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H, int D) {
  using Cf = Cfg<64, CHAN>;
  const size_t smem = sizeof(float) * (size_t)WCfg<CHAN>::TOTAL;
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CHAN) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  const bool vec = (D % 4 == 0) && (al % 16 == 0);
  const bool fast = vec && D == 64 && (reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0) &&
                    (long long)Cf::C * H * D < (1LL << 31);
  auto kern = gd_ws_kernel<CHAN>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H, 512, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D, vec, fast);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// v22: the chunkwise tensor-core kernel at DP = 128 with Hopper's warpgroup MMA (wgmma, sm_90a) for the two large
// products, Q S0 and K^T Vt.  gd_tc_kernel<128>'s data ownership and phases: warp (mt, kh) = (warp % 8, warp / 8)
// holds the same 16 x 64 tile of S^T, and warpgroup wg = warp / 4 holds rows 64 (wg & 1).. and columns 64 (wg >> 1)..
// of S^T, which is a 64 x 64 wgmma accumulator.  B operands are read by the tensor core from shared memory (once per
// warpgroup, not once per warp as with mma.sync), in the K-major, unswizzled layout: 8 x 4 core matrices of 128
// contiguous bytes.  q lands in that layout directly (cp.async); k is transposed into it by the split, with the
// state's columns in the order [0 4 1 5 2 6 3 7] within each group of 8, so that the accumulator layout of S^T is
// the A-operand layout of Q S0 (the same trick as mma.sync's, moved from the k order of Q to the column order of S).
template <bool CHAN>
struct WgCfg : Cfg<128, CHAN> {
  using B = Cfg<128, CHAN>;
  static constexpr int C = 32, DP = 128;
  static constexpr int QB = 0;                            // q: [t/8][d/4][t%8][d%4]; hi in place after the split
  static constexpr int KR = QB + C * DP;                  // k rows [t][DPS]
  static constexpr int VR = KR + C * B::DPS;              // v rows [t][NCS]; channel: Vt in place
  static constexpr int GR = VR + C * B::NCS;              // channel: gates [t][NCS] (G in place); scalar: gate[C]
  static constexpr int BR = GR + (CHAN ? C * B::NCS : C);  // scalar: beta[C]
  static constexpr int BUF = BR + (CHAN ? 0 : C);
  static constexpr int QLB = 2 * BUF;                     // lo parts of q, q's layout
  static constexpr int KTH = QLB + C * DP;                // K^T hi: [n'/8][t/4][n'%8][t%4], n' the permuted column
  static constexpr int KTL = KTH + C * DP;                // K^T lo
  static constexpr int AM = KTL + C * DP;                 // A tiles, 2 slices of C x CS
  static constexpr int OB = AM + 2 * C * B::CS;           // O^T partials, KH slices of C x NOS
  static constexpr int GS = OB + B::KH * C * B::NOS;      // scalar G_t, double-buffered
  static constexpr int TOTAL = GS + 2 * C;
  static_assert(BUF % 4 == 0 && QLB % 4 == 0 && KTH % 4 == 0 && AM % 4 == 0 && OB % 4 == 0, "16-byte aligned");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
};

// Offsets (floats) in q's layout and in K^T's; np: the position of state column d in the permuted order.
__device__ __forceinline__ int wg_qoff(int t, int d) { return (t >> 3) * 1024 + (d >> 2) * 32 + (t & 7) * 4 + (d & 3); }
__device__ __forceinline__ int wg_np(int d) { return (d & ~7) | ((d & 4) ? 2 * (d & 3) + 1 : 2 * (d & 3)); }
__device__ __forceinline__ int wg_ktoff(int np, int t) { return (np >> 3) * 256 + (t >> 2) * 32 + (np & 7) * 4 + (t & 3); }

// Shared-memory matrix descriptor, no swizzle: start, leading (K) and stride (M/N) byte offsets, each >> 4.
__device__ __forceinline__ uint64_t wg_desc(const float* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

// A descriptor for p + off floats from p's (off a multiple of 4, p + off inside shared memory): the start address
// field, in 16-byte units, stays below 2^14, so the add never reaches the offsets above it.
__device__ __forceinline__ uint64_t wg_desc_at(uint64_t d, int off) { return d + (uint64_t)(off >> 2); }

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
// st.shared / cp.async writes become visible to the tensor core's (async proxy) reads after this and a barrier.
__device__ __forceinline__ void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Pins a wgmma operand's registers in program order around the fence / wait (no code): the compiler must neither
// read an accumulator before the wait nor reuse an A fragment's registers while the tensor core may still read them.
template <int N>
__device__ __forceinline__ void wg_keep(float (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(r[i][e])::"memory");
}
template <int N>
__device__ __forceinline__ void wg_keep(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}

// d (64 x 32 per warpgroup, 16 registers) += a (64 x 8, registers) * b (8 x 32, shared memory).
__device__ __forceinline__ void wg_mma_n32(float (&d)[4][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// d (64 x 64 per warpgroup, 32 registers) += a (64 x 8, registers) * b (8 x 64, shared memory).
__device__ __forceinline__ void wg_mma_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
        "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// One chunk's inputs: q into its blocked layout, k and v (and channel gates) as rows, scalar gate and beta.
template <bool CHAN>
__device__ __forceinline__ void wg_load_chunk(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                              const float* __restrict__ v, const float* __restrict__ gate,
                                              const float* __restrict__ beta, int b, int h, int T, int H, int D,
                                              int t0, int n, int tid, bool vec, bool full) {
  using Wf = WgCfg<CHAN>;
  constexpr int DPS = Wf::DPS, NCS = Wf::NCS;
  float* qs = buf + Wf::QB;
  float* ks = buf + Wf::KR;
  float* vs = buf + Wf::VR;
  float* gs = buf + Wf::GR;
  const long long rs = (long long)H * D;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * D;
  if (full) {
    const float* qb = q + base;
    const float* kb = k + base;
    const float* vb = v + base;
    const int rsi = H * 128;
    int tidv = tid;
    if constexpr (CHAN) asm volatile("" : "+r"(tidv));  // see load_chunk
#pragma unroll
    for (int it = 0; it < 2; ++it) {
      const int idx = tidv + it * 512;
      // q: 8 consecutive lanes take 8 rows of one 16-byte column, so their stores fill distinct banks.
      const int t8 = idx & 7, e = (idx >> 3) & 31, tb = idx >> 8;
      __pipeline_memcpy_async(qs + tb * 1024 + e * 32 + t8 * 4, qb + (8 * tb + t8) * rsi + 4 * e, 16);
      const int t = idx >> 5;
      const int c = (idx & 31) * 4;
      const int o = t * rsi + c;
      __pipeline_memcpy_async(ks + t * DPS + c, kb + o, 16);
      __pipeline_memcpy_async(vs + t * NCS + c, vb + o, 16);
      if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + c, gate + base + o, 16);
    }
  } else if (vec) {
    const int pr = D >> 2;
    const int tot = n * pr;
    for (int idx = tid; idx < tot; idx += 512) {
      const int t = idx / pr;
      const int e = (idx - t * pr) << 2;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + wg_qoff(t, e), q + o, 16);
      __pipeline_memcpy_async(ks + t * DPS + e, k + o, 16);
      __pipeline_memcpy_async(vs + t * NCS + e, v + o, 16);
      if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + e, gate + o, 16);
    }
  } else {
    const int tot = n * D;
    for (int idx = tid; idx < tot; idx += 512) {
      const int t = idx / D;
      const int e = idx - t * D;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + wg_qoff(t, e), q + o, 4);
      __pipeline_memcpy_async(ks + t * DPS + e, k + o, 4);
      __pipeline_memcpy_async(vs + t * NCS + e, v + o, 4);
      if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + e, gate + o, 4);
    }
  }
  if constexpr (!CHAN) {
    float* bs = buf + Wf::BR;
    for (int t = tid; t < n; t += 512) {
      const long long o = ((long long)b * T + t0 + t) * H + h;
      __pipeline_memcpy_async(gs + t, gate + o, 4);
      __pipeline_memcpy_async(bs + t, beta + o, 4);
    }
  }
}

// A full chunk's inputs (D == 128, 16-byte aligned) by cp.async on 128 threads (ltid 0..127): q into its blocked
// layout, k and v rows (channel: gate rows), scalar gate and beta. The caller commits the group.
template <bool CHAN>
__device__ __forceinline__ void wg_load_chunk_part(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                                   const float* __restrict__ v, const float* __restrict__ gate,
                                                   const float* __restrict__ beta, int b, int h, int T, int H, int t0,
                                                   int ltid) {
  using Wf = WgCfg<CHAN>;
  constexpr int DPS = Wf::DPS, NCS = Wf::NCS;
  const long long rs = (long long)H * 128;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * 128;
  float* qs = buf + Wf::QB;
#pragma unroll
  for (int it = 0; it < 8; ++it) {
    const int idx = ltid + it * 128;
    const int t8 = idx & 7, e = (idx >> 3) & 31, tb = idx >> 8;
    __pipeline_memcpy_async(qs + tb * 1024 + e * 32 + t8 * 4, q + base + (8 * tb + t8) * rs + 4 * e, 16);
    const int t = idx >> 5;
    const int c = (idx & 31) * 4;
    const long long o = base + t * rs + c;
    __pipeline_memcpy_async(buf + Wf::KR + t * DPS + c, k + o, 16);
    __pipeline_memcpy_async(buf + Wf::VR + t * NCS + c, v + o, 16);
    if constexpr (CHAN) __pipeline_memcpy_async(buf + Wf::GR + t * NCS + c, gate + o, 16);
  }
  if constexpr (!CHAN) {
    if (ltid < 32) {
      const long long o = ((long long)b * T + t0 + ltid) * H + h;
      __pipeline_memcpy_async(buf + Wf::GR + ltid, gate + o, 4);
      __pipeline_memcpy_async(buf + Wf::BR + ltid, beta + o, 4);
    }
  }
}

template <bool CHAN>
__global__ void __launch_bounds__(512, 1)
gd_wg_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
             const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H,
             int D, bool vec, bool fast) {
  using Wf = WgCfg<CHAN>;
  constexpr int C = 32, NC = 128, NI = 8, KH = 2, IH = 64;
  constexpr int NTT = 4, NKS = 4, DPS = Wf::DPS, NCS = Wf::NCS, CS = Wf::CS, NOS = Wf::NOS;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2;
  const int tig = lane & 3;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;

  for (int i = tid; i < Wf::TOTAL; i += 512) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  wg_load_chunk<CHAN>(sm, q, k, v, gate, beta, b, h, T, H, D, 0, min(C, T), tid, vec, fast && T >= C);
  __pipeline_commit();

  const int mt = warp % 8;
  const int kh = warp / 8;
  const int j0 = 16 * mt + gid;
  const int ibase = kh * IH;
  float* am = sm + Wf::AM;
  float* ob = sm + Wf::OB;
  float* gsc = sm + Wf::GS;
  float* ql = sm + Wf::QLB;
  float* kth = sm + Wf::KTH;
  float* ktl = sm + Wf::KTL;
  float* obw = ob + kh * C * NOS;

  // S^T tile kk: (j0, c), (j0, c+1), (j0+8, c), (j0+8, c+1) in permuted column positions c = ibase + 8 kk + 2 tig,
  // that is state columns d and d + 4 with d = ibase + 8 kk + tig.
  float S[NI][4];
#pragma unroll
  for (int kk = 0; kk < NI; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;

  int psafe = 0;
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    float* cur = sm + (ch & 1) * Wf::BUF;
    __pipeline_wait_prior(0);
    __syncthreads();  // this chunk's inputs landed; the previous chunk's O partials (and G) complete
    if (ch > 0)
      store_y<128, CHAN, Wf>(y, ob, sm + ((ch - 1) & 1) * Wf::BUF + Wf::GR, gsc + ((ch - 1) & 1) * C, b, h, T, H, D,
                             t0 - C, C, psafe, tid, fast);

    float* qs = cur + Wf::QB;
    float* ksm = cur + Wf::KR;
    float* vsm = cur + Wf::VR;
    float* gsm = cur + Wf::GR;
    const float* bsm = cur + Wf::BR;

    // ---- split: q in place (hi) and into ql (lo), linear in its blocked layout; k transposed into K^T hi / lo,
    // one 16-byte core-matrix row (4 steps of one column) per item.
    {
#pragma unroll
      for (int it = 0; it < 2; ++it) {
        const int o = 4 * (tid + it * 512);
        const float4 x = *reinterpret_cast<const float4*>(qs + o);
        uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
        split(x.x, h0, l0);
        split(x.y, h1, l1);
        split(x.z, h2, l2);
        split(x.w, h3, l3);
        *reinterpret_cast<uint4*>(qs + o) = make_uint4(h0, h1, h2, h3);
        *reinterpret_cast<uint4*>(ql + o) = make_uint4(l0, l1, l2, l3);
      }
#pragma unroll
      for (int it = 0; it < 2; ++it) {
        const int idx = tid + it * 512;
        const int d = idx & 127;
        const int t4 = (idx >> 7) * 4;
        uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
        split(ksm[t4 * DPS + d], h0, l0);
        split(ksm[(t4 + 1) * DPS + d], h1, l1);
        split(ksm[(t4 + 2) * DPS + d], h2, l2);
        split(ksm[(t4 + 3) * DPS + d], h3, l3);
        const int o = wg_ktoff(wg_np(d), t4);
        *reinterpret_cast<uint4*>(kth + o) = make_uint4(h0, h1, h2, h3);
        *reinterpret_cast<uint4*>(ktl + o) = make_uint4(l0, l1, l2, l3);
      }
    }

    // ---- gate scan (gd_tc_kernel's)
    int pred = 0;
    float GC0 = 1.f, GC1 = 1.f, cf = 0.f;
    float gv[8];
    float excl = 1.f;
    const int sj = tid >> 2;
    const int sseg = tid & 3;
    if constexpr (CHAN) {
      float p = 1.f;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int t = sseg * 8 + u;
        const float g = (t < n && sj < D) ? gsm[t * NCS + sj] : 1.f;
        p *= g;
        gv[u] = p;
      }
      float incl = p;
      float o = __shfl_up_sync(kFull, incl, 1, 4);
      if (sseg >= 1) incl *= o;
      o = __shfl_up_sync(kFull, incl, 2, 4);
      if (sseg >= 2) incl *= o;
      excl = __shfl_up_sync(kFull, incl, 1, 4);
      if (sseg == 0) excl = 1.f;
      const float tot = __shfl_sync(kFull, incl, 3, 4);
      pred = !(tot >= kSafe);
    } else {
      float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const float o = __shfl_up_sync(kFull, G, off);
        if (lane >= off) G *= o;
      }
      GC0 = __shfl_sync(kFull, G, 31);
      GC1 = GC0;
      pred = !(GC0 >= kSafe);
      if (!pred) cf = (lane < n) ? bsm[lane] / G : 0.f;
      if (warp == 0) gsc[(ch & 1) * C + lane] = G;
    }
    const int safe = __syncthreads_or(pred);
    // Chunk c+1's loads, into the previous chunk's buffer (every thread is past its output, which read G there):
    // a full chunk by warps 12-15 while warps 0-11 build the A tiles, a partial one by every thread.
    if (ch + 1 < nchunks) {
      if (fast && T - t0 - C >= C) {
        if (warp >= 12)
          wg_load_chunk_part<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, t0 + C, tid - 384);
      } else {
        wg_load_chunk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C, min(C, T - t0 - C),
                            tid, vec, false);
      }
    }
    __pipeline_commit();

    if (!safe) {
      // ---- A = causal(Q K^T): tiles (mtA, ns) with ns <= 2 mtA + 1 (6 tiles), each in two k halves (mma.sync;
      // k position tig is column d, tig + 4 is d + 4).
      if (warp < 12) {
        const int item = warp;
        const int tau = item >> 1;
        const int half = item & 1;
        const int mtA = tau < 2 ? 0 : 1;
        const int ns = tau < 2 ? tau : tau - 2;
        float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        const int ta = 16 * mtA + gid;
        const int sb = 8 * ns + gid;
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          const int d = half * 64 + 8 * kk + tig;
          const int oa = wg_qoff(ta, d), oa4 = oa + 32, ob8 = wg_qoff(ta + 8, d), ob84 = ob8 + 32;
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
        float acc[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
        float* amh = am + half * C * CS;
        const int t = 16 * mtA + gid;
        const int s = 8 * ns + 2 * tig;
        amh[t * CS + s] = (s <= t) ? acc[0] : 0.f;
        amh[t * CS + s + 1] = (s + 1 <= t) ? acc[1] : 0.f;
        amh[(t + 8) * CS + s] = (s <= t + 8) ? acc[2] : 0.f;
        amh[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? acc[3] : 0.f;
      }
      if constexpr (CHAN) {
        // In place: gate -> G (cumulative), v -> v / G (0 beyond the chunk end).
        if (sj < NC) {
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            const int t = sseg * 8 + u;
            if (t < n) {
              const float G = excl * gv[u];
              gsm[t * NCS + sj] = G;
              vsm[t * NCS + sj] = vsm[t * NCS + sj] / G;
            } else {
              vsm[t * NCS + sj] = 0.f;
            }
          }
        }
      }
      wg_proxy_fence();
      __syncthreads();  // A tiles, split q / K^T (and channel G, Vt) visible, to the tensor core's reads too
      if constexpr (CHAN) {
        GC0 = gsm[(n - 1) * NCS + j0];
        GC1 = gsm[(n - 1) * NCS + j0 + 8];
      }

      // ---- O^T partial = S^T Q^T over this warpgroup's 64 state columns: 8 k steps x 3 wgmma m64n32k8, in two
      // halves of 4 k steps (the split S of a half in flight is 32 registers; 64 made ptxas spill at the cap).
      float O[NTT][4];
#pragma unroll
      for (int nt = 0; nt < NTT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        uint32_t ah[NI / 2][4], al[NI / 2][4];
#pragma unroll
        for (int u = 0; u < NI / 2; ++u) {
          const int kk = hf * (NI / 2) + u;
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
        for (int u = 0; u < NI / 2; ++u) {
          const int dq = (ibase + 8 * (hf * (NI / 2) + u)) >> 2;  // 16-byte column of q where this k step starts
          const uint64_t dh = wg_desc(qs + dq * 32, 128, 4096);
          const uint64_t dl = wg_desc(ql + dq * 32, 128, 4096);
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
      uint32_t vh[NKS][4], vl[NKS][4];
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        const int s0 = 8 * ks + tig;
        float x0 = vsm[s0 * NCS + j0];
        float x1 = vsm[s0 * NCS + j0 + 8];
        float x2 = vsm[(s0 + 4) * NCS + j0];
        float x3 = vsm[(s0 + 4) * NCS + j0 + 8];
        if constexpr (!CHAN) {
          const float ca = __shfl_sync(kFull, cf, s0);
          const float cb = __shfl_sync(kFull, cf, s0 + 4);
          x0 *= ca;
          x1 *= ca;
          x2 *= cb;
          x3 *= cb;
        }
        split(x0, vh[ks][0], vl[ks][0]);
        split(x1, vh[ks][1], vl[ks][1]);
        split(x2, vh[ks][2], vl[ks][2]);
        split(x3, vh[ks][3], vl[ks][3]);
      }
      // + Vt^T A^T (this warp's share of the s steps), mma.sync
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        if (ks / (NKS / KH) != kh) continue;
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          if (nt < ks) continue;
          const int ta = (8 * nt + gid) * CS + 8 * ks + tig;
          const float b0 = am[ta] + am[C * CS + ta];
          const float b1 = am[ta + 4] + am[C * CS + ta + 4];
          uint32_t bh0, bl0, bh1, bl1;
          split(b0, bh0, bl0);
          split(b1, bh1, bl1);
          mma3(O[nt], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
        }
      }
#pragma unroll
      for (int nt = 0; nt < NTT; ++nt) {
        const int t = 8 * nt + 2 * tig;
        obw[t * NOS + j0] = O[nt][0];
        obw[(t + 1) * NOS + j0] = O[nt][1];
        obw[t * NOS + j0 + 8] = O[nt][2];
        obw[(t + 1) * NOS + j0 + 8] = O[nt][3];
      }
      // ---- S^T = G_C (S^T + Vt^T K): a fresh 64 x 64 accumulator per warpgroup, 4 k steps x 3 wgmma m64n64k8.
      float acc[NI][4];
#pragma unroll
      for (int kk = 0; kk < NI; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[kk][e] = 0.f;
      wg_keep(acc);
      wg_keep(vh);
      wg_keep(vl);
      wg_fence();
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        const int o = (ibase >> 3) * 256 + (2 * ks) * 32;
        const uint64_t dh = wg_desc(kth + o, 128, 1024);
        const uint64_t dl = wg_desc(ktl + o, 128, 1024);
        wg_mma_n64(acc, vl[ks], dh);
        wg_mma_n64(acc, vh[ks], dl);
        wg_mma_n64(acc, vh[ks], dh);
      }
      wg_commit();
      wg_wait0();
      wg_keep(acc);
      wg_keep(vh);
      wg_keep(vl);
#pragma unroll
      for (int kk = 0; kk < NI; ++kk) {
        S[kk][0] = (S[kk][0] + acc[kk][0]) * GC0;
        S[kk][1] = (S[kk][1] + acc[kk][1]) * GC0;
        S[kk][2] = (S[kk][2] + acc[kk][2]) * GC1;
        S[kk][3] = (S[kk][3] + acc[kk][3]) * GC1;
      }
    } else {
      __syncthreads();  // split q visible
      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k and v as loaded).
      for (int t = 0; t < n; ++t) {
        float g0, g1, cv0, cv1;
        if constexpr (CHAN) {
          g0 = gsm[t * NCS + j0];
          g1 = gsm[t * NCS + j0 + 8];
          cv0 = vsm[t * NCS + j0];
          cv1 = vsm[t * NCS + j0 + 8];
        } else {
          g0 = gsm[t];
          g1 = g0;
          const float bt = bsm[t];
          cv0 = bt * vsm[t * NCS + j0];
          cv1 = bt * vsm[t * NCS + j0 + 8];
        }
        float p0 = 0.f, p1 = 0.f;
#pragma unroll
        for (int kk = 0; kk < NI; ++kk) {
          const int d = ibase + 8 * kk + tig;
          const int oq = wg_qoff(t, d);
          const float kx = ksm[t * DPS + d];
          const float ky = ksm[t * DPS + d + 4];
          const float qx = qs[oq] + __uint_as_float(__float_as_uint(ql[oq]) - 0x1000u);
          const float qy = qs[oq + 32] + __uint_as_float(__float_as_uint(ql[oq + 32]) - 0x1000u);
          S[kk][0] = fmaf(cv0, kx, S[kk][0] * g0);
          S[kk][1] = fmaf(cv0, ky, S[kk][1] * g0);
          S[kk][2] = fmaf(cv1, kx, S[kk][2] * g1);
          S[kk][3] = fmaf(cv1, ky, S[kk][3] * g1);
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
          obw[t * NOS + j0] = p0;
          obw[t * NOS + j0 + 8] = p1;
        }
      }
    }
    psafe = safe;
  }
  __syncthreads();
  const int lt0 = (nchunks - 1) * C;
  store_y<128, CHAN, Wf>(y, ob, sm + ((nchunks - 1) & 1) * Wf::BUF + Wf::GR, gsc + ((nchunks - 1) & 1) * C, b, h, T,
                         H, D, lt0, T - lt0, psafe, tid, fast);
}

template <bool CHAN>
void launch_wg(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
               const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H, int D) {
  using Cf = Cfg<128, CHAN>;
  const size_t smem = sizeof(float) * (size_t)WgCfg<CHAN>::TOTAL;
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CHAN) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  const bool vec = (D % 4 == 0) && (al % 16 == 0);
  const bool fast = vec && D == 128 && (reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0) &&
                    (long long)Cf::C * H * D < (1LL << 31);
  auto kern = gd_wg_kernel<CHAN>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H, 512, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D, vec, fast);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// v27 -> v29: gd_wg_kernel's arithmetic at D = DP (64 or 128; aligned, full width) on warps in two roles. The first
// DP / 16 warps (DP / 64 consumer warpgroups) each own a 64 x DP block of S^T; they run chunk c's Q S0 and K^T Vt on
// wgmma and A Vt on mma.sync, and write y(c) from registers. The prep warps split and scan chunk c+1, vote, and
// build its A tiles; the last NLW warps issue chunk c+2's cp.async. One CTA barrier per chunk hands a prepared
// chunk over. Three input buffers (q hi in place, K^T hi over the k rows once they are read); double buffers for
// q lo, K^T lo, A, G, beta/G, safe flag. DP = 128: 8 consumer warps, 7 prep warps; DP = 64: 4 consumer warps,
// 11 prep warps; one load warp. The register split (setmaxnreg), Q S0's grouping and y's path are per DP below.
template <int DP>
struct WsgCfg {
  static constexpr int C = 32, DPS = DP + 8, NCS = DP + 8, CS = 36;
  static constexpr int NCW = DP / 16;               // consumer warps
  static constexpr int NLW = 1;                     // load warps, the last ones
  static constexpr int NBUF = DP == 64 ? 4 : 3;     // input buffers; the load warp runs NBUF - 1 chunks ahead
  static constexpr int REG_C = DP == 128 ? 168 : 0;  // consumer / producer registers by setmaxnreg (0: no split)
  static constexpr int REG_P = DP == 128 ? 88 : 0;
  static constexpr int QG = 4;                       // k steps of Q S0 a wgmma group (one wait each)
  static constexpr bool VTF = DP == 128;             // Vt^T fragments built before Q S0
  static constexpr bool KVE = false;                  // K^T Vt issued before the y stores
  static constexpr int NPW = 16 - NCW - NLW;        // prep warps
  static constexpr int NP = 32 * NPW;               // prep threads (named barrier 1)
  static constexpr int NPROD = 32 * (NPW + NLW);    // prep and load threads (named barrier 2)
  static constexpr int QB = 0;                      // q blocked (wsg_qoff), hi in place after the split
  static constexpr int KR = QB + C * DP;            // k rows [t][DPS]; K^T hi (wg_ktoff) over them after the split
  static constexpr int VR = KR + C * DPS;           // v rows [t][NCS]
  static constexpr int GR = VR + C * NCS;           // gate[C]
  static constexpr int BR = GR + C;                 // beta[C]
  static constexpr int BUF = BR + C;
  static constexpr int QL = NBUF * BUF;             // q lo, 2 chunks
  static constexpr int KTL = QL + 2 * C * DP;       // K^T lo, 2 chunks
  static constexpr int AM = KTL + 2 * C * DP;       // A (its k halves summed), 2 chunks of C x CS
  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks
  static constexpr int CF = GS + 2 * C;             // beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks
  static constexpr bool SEP = DP == 64;             // q hi and K^T hi in arrays of their own; the inputs stay raw
  static constexpr int QH = SF + 4;                 // q hi, 2 chunks (q's blocked layout), when SEP
  static constexpr int KTHS = QH + 2 * C * DP;      // K^T hi, 2 chunks, when SEP
  static constexpr int TOTAL = SEP ? KTHS + 2 * C * DP : SF + 4;
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert(DP == 64 || DP == 128, "one or two consumer warpgroups");
  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0 && QH % 4 == 0, "16-byte aligned");
  static_assert(C * DP <= C * DPS, "K^T hi fits over the k rows");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
};

// Offset (floats) in q's blocked layout: core matrices of 8 steps x 4 columns, 128 B apart along d, 32 DP B along t.
template <int DP>
__device__ __forceinline__ int wsg_qoff(int t, int d) {
  return (t >> 3) * (8 * DP) + (d >> 2) * 32 + (t & 7) * 4 + (d & 3);
}

#define WSH_MARK(m, c)  // a probe's hook
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
  const float* buf = sm + (c % W::NBUF) * W::BUF;
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

// wsg_atile from the raw inputs (SEP): the same operands, split as they are loaded (q at its blocked offset, k from
// its rows: K^T (d, s) is k[s][d]).
template <int DP>
__device__ __forceinline__ void wsg_atile_raw(float* sm, int c, int w, int gid, int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, CS = W::CS, DPS = W::DPS;
  static_assert(DP == 64, "one 64-column k half");
  const float* buf = sm + (c % W::NBUF) * W::BUF;
  const int nb = c & 1;
  const float* qr = buf + W::QB;
  const float* kr = buf + W::KR;
  const int mtA = w < 2 ? 0 : 1;
  const int ns = w < 2 ? w : w - 2;
  const int ta = 16 * mtA + gid;
  const int sb = 8 * ns + gid;
  float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const int d = 8 * kk + tig;
    const int oa = wsg_qoff<DP>(ta, d), oa4 = oa + 32, ob8 = wsg_qoff<DP>(ta + 8, d), ob84 = ob8 + 32;
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
  float a[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) a[e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
  float* am = sm + W::AM + nb * C * CS;
  const int t = 16 * mtA + gid;
  const int s = 8 * ns + 2 * tig;
  am[t * CS + s] = (s <= t) ? a[0] : 0.f;
  am[t * CS + s + 1] = (s + 1 <= t) ? a[1] : 0.f;
  am[(t + 8) * CS + s] = (s <= t + 8) ? a[2] : 0.f;
  am[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? a[3] : 0.f;
}

// Prep warps with SEP: the gate scan and vote first; then, unless the chunk takes the safe path, the six A-tile warps
// build their tiles from the raw inputs while the other five split q into q hi / q lo and k into K^T hi / K^T lo in
// their own arrays (on the safe path every prep warp splits, and no A is built).
template <int DP>
__device__ __forceinline__ void wsg_prepare_sep(float* sm, int c, int n, int ptid, int lane, int pw, int gid,
                                                int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, DPS = W::DPS, NP = W::NP, NQ4 = C * DP / 4, NA = 6 * 32;
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
  if (!safe && pw < 6) {
    wsg_atile_raw<DP>(sm, c, pw, gid, tig);
    return;
  }
  const int sp = safe ? ptid : ptid - NA, nsp = safe ? NP : NP - NA;
  const float* qr = buf + W::QB;
  const float* kr = buf + W::KR;
  float* qh = sm + W::QH + nb * C * DP;
  float* ql = sm + W::QL + nb * C * DP;
  float* kth = sm + W::KTHS + nb * C * DP;
  float* ktl = sm + W::KTL + nb * C * DP;
  for (int i = sp; i < NQ4; i += nsp) {
    const int o = 4 * i;
    const float4 x = *reinterpret_cast<const float4*>(qr + o);
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(x.x, h0, l0);
    split(x.y, h1, l1);
    split(x.z, h2, l2);
    split(x.w, h3, l3);
    *reinterpret_cast<uint4*>(qh + o) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(ql + o) = make_uint4(l0, l1, l2, l3);
  }
  for (int idx = sp; idx < NQ4; idx += nsp) {
    const int d = idx & (DP - 1);
    const int t4 = ((unsigned)idx / DP) * 4;
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(kr[t4 * DPS + d], h0, l0);
    split(kr[(t4 + 1) * DPS + d], h1, l1);
    split(kr[(t4 + 2) * DPS + d], h2, l2);
    split(kr[(t4 + 3) * DPS + d], h3, l3);
    const int o = wg_ktoff(wg_np(d), t4);
    *reinterpret_cast<uint4*>(kth + o) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(ktl + o) = make_uint4(l0, l1, l2, l3);
  }
  wg_proxy_fence();  // q hi / lo, K^T hi / lo visible to the consumers' wgmma after the CTA barrier
}

// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible: q split in place (hi) and into q lo, k into K^T
// hi over its own rows and K^T lo, the gate scan and vote, then A unless the chunk takes the safe path.
template <int DP>
__device__ __forceinline__ void wsg_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {
  using W = WsgCfg<DP>;
  if constexpr (W::SEP) {
    wsg_prepare_sep<DP>(sm, c, n, ptid, lane, pw, gid, tig);
    return;
  }
  constexpr int C = W::C, DPS = W::DPS, NP = W::NP, NQ4 = C * DP / 4, KXR = (NQ4 + NP - 1) / NP;
  float* buf = sm + (c % W::NBUF) * W::BUF;
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
  // k: every row value is read before K^T hi lands over the rows. Its items start at thread KOFF (where q's leave
  // off when KOFF = NQ4 % NP): which prep warps carry the split's remainder.
  constexpr int KOFF = DP == 128 ? NQ4 % NP : 0;
  const int kp = ptid >= KOFF ? ptid - KOFF : ptid + NP - KOFF;
  float kx[KXR][4];
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = kp + r * NP;
    const int d = idx & (DP - 1);
    const int t4 = ((unsigned)idx / DP) * 4;
#pragma unroll
    for (int u = 0; u < 4; ++u) kx[r][u] = idx < NQ4 ? kth[(t4 + u) * DPS + d] : 0.f;
  }
  prep_sync<NP>();
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = kp + r * NP;
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

// Vt^T fragments of chunk c (A operand, rows j0 and j0 + 8, k = s) for every s step, split.
template <int DP>
__device__ __forceinline__ void wsg_vt_frags(uint32_t (&vh)[4][4], uint32_t (&vl)[4][4], const float* vsm,
                                             const float* cfs, int j0, int tig) {
  constexpr int NCS = WsgCfg<DP>::NCS;
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
}

// Issue (no wait) acc = Vt^T K: a fresh 64 x 64 accumulator for each 64-column block, 4 k steps x 3 wgmma m64n64k8.
template <int NA>
__device__ __forceinline__ void wsg_ktvt_issue(float (&acc)[NA][8][4], uint32_t (&vh)[4][4], uint32_t (&vl)[4][4],
                                               const float* kth, const float* ktl) {
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
#pragma unroll
      for (int a = 1; a < W::NBUF - 1; ++a) {  // chunks 1 .. NBUF - 2, a group each
        if (a < nchunks) wsg_load<DP>(sm + a * W::BUF, q, k, v, gate, beta, b, h, T, H, a * C, min(C, T - a * C), lt);
        __pipeline_commit();
      }
      __pipeline_wait_prior(W::NBUF - 2);  // chunk 0 landed
    }
    producer_sync<W::NPROD>();  // chunk 0's inputs visible to the prep warps
    if (!loader) wsg_prepare<DP>(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    cta_sync();
    for (int ch = 0; ch < nchunks; ++ch) {
      if (ch + 1 < nchunks) {
        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed (the newer groups may not have)
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
        if (loader) {
          // chunk c + NBUF - 1 into chunk c-1's buffer, free since the last CTA barrier
          const int ca = ch + W::NBUF - 1, t2 = ca * C;
          if (ca < nchunks)
            wsg_load<DP>(sm + (ca % W::NBUF) * W::BUF, q, k, v, gate, beta, b, h, T, H, t2, min(C, T - t2), lt);
          __pipeline_commit();
        } else {
          wsg_prepare<DP>(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        }
      }
      cta_sync();  // chunk c consumed; chunk c+1 prepared
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
    const float* cur = sm + (ch % W::NBUF) * W::BUF;
    const float* qs = W::SEP ? sm + W::QH + nb * C * DP : cur + W::QB;
    const float* kth = W::SEP ? sm + W::KTHS + nb * C * DP : cur + W::KR;
    const float* vsm = cur + W::VR;
    const float* ql = sm + W::QL + nb * C * DP;
    const float* ktl = sm + W::KTL + nb * C * DP;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    if (!sfl[nb]) {
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      if constexpr (W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in groups of QG k steps (the split S of a group is
      // 8 QG registers), a wait each.
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
      if (ch > 0) {  // chunk 0: S is zero, so O stays +0 as the wgmma would leave it
#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {
        uint32_t ah[W::QG][4], al[W::QG][4];
#pragma unroll
        for (int u = 0; u < W::QG; ++u) {
          const int kk = W::QG * qb + u;
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
        for (int u = 0; u < W::QG; ++u) {
          const int dq = 2 * (W::QG * qb + u);  // 16-byte column of q where this k step starts
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
      }  // ch > 0
      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores (defined for every t < C)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        gy[nt][0] = gsc[8 * nt + 2 * tig];
        gy[nt][1] = gsc[8 * nt + 2 * tig + 1];
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
      // ---- S^T = G_C (S^T + Vt^T K), issued before the y stores when KVE, else after them.
      float acc[NA][8][4];
      if constexpr (W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      // y(c) = G_t O^T from registers: a full chunk without branches (G_t loaded ahead), a short one guarded.
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
      if constexpr (!W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
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
          yb[t * rs + j0] = p0;
          yb[t * rs + j0 + 8] = p1;
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
// ---------------------------------------------------------------------------------------------
// v53 / v54: gd_wsg_kernel's roles at D = 128 with the products on fp16 wgmma (twice the TF32 rate). Each operand
// is split in two fp16 pieces, x s = hi + lo with hi = fp16(x s), lo = fp16(x s - hi), under a power-of-two scale s
// that puts the largest |x| of its scale group in [2^14, 2^15) (fp16's 11-bit significand twice: what 3xTF32 keeps,
// and fp16's exponent range only has to hold one group's spread). Scale groups are ones that factor out of the
// product: S^T and Vt^T by row j (the A operands), q by step t (a column of O^T, a row of A), k by step s for A = Q K^T
// (a column of A) and, v56, by chunk for K^T Vt (the whole accumulator, unscaled in the update). v54: A on
// one prep warpgroup's wgmma (v53 built it with mma.sync, which waits behind the consumers' wgmma), so q and k are
// split first, behind a prep barrier; the raw q and k are read only by that split, so they need two buffers, not
// three, and the safe path reads the pieces. A Vt stays 3xTF32 on mma.sync.

struct WshCfg {
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
  static constexpr int QH = GB + NBUF * GBUF;       // q hi / lo interleaved by 8-step group (wsh_qoff2), chunk 0 then 1
  static constexpr int QL = QH + 2 * H16;           // (the end of chunk 0's pieces)
  static constexpr int KAH = QL + 2 * H16;          // k hi then k lo (wsh_qoff by step) of chunk 0, then of 1: A's B
  static constexpr int KH = KAH + 4 * H16;          // k hi (wsh_koff by state column), 2 chunks, for K^T Vt
  static constexpr int KL = KH + 2 * H16;           // k lo, for K^T Vt
  static constexpr int RQ = KL + 2 * H16;           // 1 / (q's scale) by step t, 2 chunks
  static constexpr int RKA = RQ + 2 * C;            // 1 / (k's scale) by step s, 2 chunks
  static constexpr int RK = RKA + 2 * C;            // 1 / (k's scale for K^T Vt, one a chunk), 2 chunks of DP
  static constexpr int A16 = C * C / 2;             // floats of one C x C fp16 array
  static constexpr int AP = RK + 2 * DP;            // A's pieces (wsh_koff by step s, row t): hi, lo of chunk 0, then 1
  static constexpr int RA = AP + 4 * A16;           // 1 / (A's scale) by row t, 2 chunks
  static constexpr int RG = RA + 2 * C;             // 1 / G_s (0 on a safe chunk), 2 chunks
  static constexpr int GS = RG + 2 * C;             // G_t, 2 chunks
  static constexpr int CF = GS + 2 * C;             // beta_s / G_s, 2 chunks
  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks
  static constexpr int KMX = SF + 4;                // k's largest |value| by k-splitting warp
  static constexpr int XA = KMX + 4;                // A's hand-over between prep warps pw and pw ^ 2: 256 float4
  static constexpr int MB = XA + 1024;              // NBUF mbarriers (8 bytes each), a chunk's TMA each
  static constexpr int TOTAL = MB + 2 * NBUF;
  static_assert(REG_C * 32 * NCW + REG_P * 32 * (16 - NCW) <= 65536, "register file");
  static_assert((TILE * 4) % 1024 == 0, "tiles 1024-byte aligned (the swizzle's period)");
  static_assert(QH % 4 == 0 && RQ % 4 == 0 && RK % 4 == 0 && AP % 4 == 0 && RA % 4 == 0 && XA % 4 == 0 && MB % 2 == 0, "aligned");
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
// A chunk of one tensor (128 columns x 32 steps of one head) as one box of wsh_map's 5D view; box g of the 4D
// view's layout at 4 KB g.
__device__ __forceinline__ void tma_tile(float* dst, const CUtensorMap* map, int h, int t0, int b, uint64_t* m) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], "
      "[%7];" ::"r"(sm_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(0), "r"(t0), "r"(0), "r"(h), "r"(b), "r"(sm_addr(m))
      : "memory");
}
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
  tma_tile(qd, tq, h, t0, b, m);
  tma_tile(kd, tk, h, t0, b, m);
  tma_tile(vd, tv, h, t0, b, m);
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

// Offsets in halves. q as wgmma's A (M = t, K = i) or Q^T as its B (K = i, N = t), and k likewise as K^T for
// A = Q K^T: core matrices of 8 steps x 8 columns, 128 B apart along i, 2 KB along t. K as wgmma's B (K = s, N = i): core matrices of 8 columns x 8 steps, 128 B apart along s, 512 B
// along i, the steps of each 8 in wg_np's order (position 2a + b holds step a + 4b), which is the order of a TF32
// fragment's k positions (tig, tig + 4): the fp16 Vt^T fragments are the TF32 ones' values repacked.
__device__ __forceinline__ int wsh_qoff(int t, int i) { return (t >> 3) * 1024 + (i >> 3) * 64 + (t & 7) * 8 + (i & 7); }
// q's pieces: hi of steps 8 w .. 8 w + 7 (2,048 bytes), then their lo: as A's M = 64 operand (rows 16 w .. 16 w + 7
// hi, 16 w + 8 .. lo of the same steps) each thread of A's accumulator holds both parts of its row.
__device__ __forceinline__ int wsh_qoff2(int t, int i) { return (t >> 3) * 2048 + (i >> 3) * 64 + (t & 7) * 8 + (i & 7); }
__device__ __forceinline__ int wsh_koff(int s, int i) { return (i >> 3) * 256 + (wg_np(s) >> 3) * 64 + (i & 7) * 8 + (wg_np(s) & 7); }

// s = 2^(14 - e) for m in [2^e, 2^(e+1)), so |x| <= m scales below 2^15; inv = 1 / s. Both normal floats for any m.
__device__ __forceinline__ void pow2_scale(float m, float& s, float& inv) {
  const int eb = (int)(__float_as_uint(m) >> 23);  // m >= 0; 255: inf or nan
  const int f = min(max(268 - eb, 2), 252);
  s = __uint_as_float((uint32_t)f << 23);
  inv = __uint_as_float((uint32_t)(254 - f) << 23);
}

// Scaled values x0, x1 into fp16 pieces, packed in pairs (x0 in the low half).
// x 2^k for a positive normal x: 0 below the normal range, the exponent held at 2^127's above it.
__device__ __forceinline__ float ldexp_sat(float x, int k) {
  const int e = (int)(__float_as_uint(x) >> 23) + k;
  return e <= 0 ? 0.f : __uint_as_float((__float_as_uint(x) & 0x007fffffu) | ((uint32_t)min(e, 254) << 23));
}
// floor(log2 x) for x >= 0 normal (-127 for 0).
__device__ __forceinline__ int exp_of(float x) { return (int)(__float_as_uint(x) >> 23) - 127; }

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

// d (64 x 64 per warpgroup) += a (64 x 16 fp16, shared memory) * b (16 x 64 fp16, shared memory), both K-major.
__device__ __forceinline__ void wh_mma_ss_n64(float (&d)[8][4], uint64_t ad, uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1, 0, 0;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
        "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(ad), "l"(bd));
}

// A = causal(Q K^T) of chunk c on the first prep warpgroup: [q hi; q lo] interleaved by step group (64 rows) times
// [K hi | K lo] (64 columns), 8 k steps x 1 wgmma. Warp pw's rows 16 pw + gid and + 8 hold q hi and q lo of step
// t = 8 pw + gid, and columns s and 32 + s k hi and k lo of step s: each thread sums its row's four parts, then the
// row is unscaled by step (q's scale for t, k's for s), masked and stored for A Vt.
__device__ __forceinline__ void wsh_amat(float* sm, int nb, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C;
  const float* qp = sm + W::QH + 2 * nb * W::H16;  // M row 16 w + 8 h + r: piece h of q's step 8 w + r
  const float* kp = sm + W::KAH + 2 * nb * W::H16;  // N column 32 h + s: piece h of k's step s
  float a[8][4];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[nt][e] = 0.f;
  wg_keep(a);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)  // columns 16 kk ..: 128 halves (64 floats) a step
    wh_mma_ss_n64(a, wg_desc(qp + 64 * kk, 128, 2048), wg_desc(kp + 64 * kk, 128, 2048));
  wg_commit();
  wg_wait0();
  wg_keep(a);
  const int t = 8 * pw + gid;  // e = 0, 1: q hi's row t; e = 2, 3: q lo's; nt + 4: k lo's columns
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
    // the four parts, the small ones first: lo lo, lo hi, hi lo, hi hi
    const float v0 = ((a[nt + 4][2] + a[nt][2]) + a[nt + 4][0]) + a[nt][0];
    const float v1 = ((a[nt + 4][3] + a[nt][3]) + a[nt + 4][1]) + a[nt][1];
    x0[2 * nt] = (s <= t) ? v0 * r0 * cx : 0.f;
    x0[2 * nt + 1] = (s + 1 <= t) ? v1 * r0 * cy : 0.f;
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

// Steps 8 tb .. 8 tb + 7 of q or k (one warp, a raw tile) into hi / lo pieces by step, each step under its own
// scale; 1 / scale into rq. Lane: step 8 tb + (lane & 7), 16-byte columns g, g + 4, ..., g + 28 (g = lane >> 3):
// 8 lanes read 8 rows' same word (distinct banks under the swizzle) and 16 lanes write 128 contiguous bytes.
// Returns the block's largest |value| (all lanes) when WMAX.
template <bool WMAX, bool QI = false>
__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane,
                                             float rg = 1.f) {
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
    const int o = (QI ? wsh_qoff2(t, 4 * (g + 4 * u)) : wsh_qoff(t, 4 * (g + 4 * u))) >> 1;
    *reinterpret_cast<uint2*>(qh + o) = make_uint2(h0, h1);
    *reinterpret_cast<uint2*>(ql + o) = make_uint2(l0, l1);
  }
  if (g == 0) rq[t] = inv;
  if (WMAX) {  // the largest |x_t| / G_t over the block (rg: this lane's row's 1 / G_t)
    m *= rg;
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 1));
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 2));
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 4));
  }
  return m;
}

// k / G_s's state columns 32 g .. 32 g + 31 (one warp, a column a lane, all 32 steps: box g) into K hi / lo under
// the chunk's scale sc (rg: 1 / G_s by step).
__device__ __forceinline__ void wsh_split_k(const float* kr, uint32_t* kh, uint32_t* kl, float sc, const float* rg,
                                            int g, int lane) {
  const int i = 32 * g + lane;
  float x[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) x[s] = kr[wsh_toff(s, i)] * rg[s];
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

// Prep warps (pw 0..7): the gate scan (each warp); round one: q's block pw by step (warpgroup 0) or k's block
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
  const float rg = (!pred && lane < n) ? 1.f / G : 0.f;
  if (pw == 0) {
    sm[W::GS + nb * C + lane] = G;
    sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
    sm[W::RG + nb * C + lane] = rg;
  }
  if (pw < 4) {
    wsh_split_q<false, true>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16),
                             reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16 + 512), sm + W::RQ + nb * C, pw,
                             lane);
  } else {
    const float m = wsh_split_q<true>(kt, reinterpret_cast<uint32_t*>(sm + W::KAH + 2 * nb * W::H16),
                                      reinterpret_cast<uint32_t*>(sm + W::KAH + (2 * nb + 1) * W::H16), sm + W::RKA + nb * C,
                                      pw - 4, lane, __shfl_sync(kFull, rg, 8 * (pw - 4) + (lane & 7)));
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
                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, sm + W::RG + nb * C, pw - 4, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
  }
  WSH_MARK(3, c);
}

// Vt''^T = (beta_s v_s)^T's rows j0, j0 + 8 (this thread's steps 8 ks + tig and + 4) from v's TMA tile into fp16
// pieces under a power-of-two scale a row (1 / scale: iv0, iv1), packed in pairs of those steps, the order wg_np
// gives K's and A's layouts (wsh_koff): the A operand of Vt''^T A'^T and Vt''^T K''.
__device__ __forceinline__ void wsh_vt_pieces(uint32_t (&wh)[2][4], uint32_t (&wl)[2][4], float& iv0, float& iv1,
                                              const float* vt, const float* bs, const int (&vo)[4], int tig) {
  float x[4][4];
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {  // wsh_toff(8 ks + tig (+ 4), j0 (+ 8)) = vo[..] + 256 ks
    const int s0 = 8 * ks + tig;
    const float ca = bs[s0];
    const float cb = bs[s0 + 4];
    x[ks][0] = vt[vo[0] + 256 * ks] * ca;
    x[ks][1] = vt[vo[1] + 256 * ks] * ca;
    x[ks][2] = vt[vo[2] + 256 * ks] * cb;
    x[ks][3] = vt[vo[3] + 256 * ks] * cb;
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
  const uint64_t bh = wg_desc(ah, 128, 512), bl = wg_desc(al, 128, 512);
#pragma unroll
  for (int m = 0; m < 2; ++m) {  // steps 16 m ..: 128 halves
    const uint64_t dh = wg_desc_at(bh, 64 * m), dl = wg_desc_at(bl, 64 * m);
    wh_mma_n32(p, wl[m], dh);
    wh_mma_n32(p, wh[m], dl);
    wh_mma_n32(p, wh[m], dh);
  }
}

__global__ void __launch_bounds__(512, 1)
gd_wsh_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
              const __grid_constant__ CUtensorMap tv, const float* __restrict__ gate, const float* __restrict__ beta,
              float* __restrict__ y, int T, int H) {
  using W = WshCfg;
  constexpr int DP = W::DP, C = W::C, CS = W::CS;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2;
  const int tig = lane & 3;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;

  if (sm_addr(sm) & 1023) __trap();  // wsh_toff's swizzle assumes 1024-byte aligned tiles
  for (int i = tid; i < W::MB; i += 512) sm[i] = 0.f;
  if (tid == 0) {
    for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  wg_proxy_fence();  // the zeros before the copy engine's writes
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  const int* sfl = reinterpret_cast<const int*>(sm + W::SF);
  if (warp >= W::NCW) {
    // ---- producers: the prep warps prepare chunk c+1 while the consumers run chunk c; lane 0 of the last one
    // issues chunk c+2's TMA.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(W::REG_P));
    const int ptid = tid - 32 * W::NCW;
    const int pw = warp - W::NCW;
    const bool issuer = pw == W::NPW - 1;
    float gn = 0.f, bn = 0.f;  // the next chunk to store's gate and beta (lane t)
    if (issuer) {
      if (lane == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tq)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tk)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tv)) : "memory");
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
        if (issuer) {
          wsh_gb_store(sm, ch + 1, gn, bn, lane);
        }
        WSH_MARK(8, ch + 1);
        wsh_wait_chunk(sm, ch + 1);
        WSH_MARK(9, ch + 1);
        producer_sync<W::NP>();  // chunk c+1's gate and beta visible
        WSH_MARK(6, ch + 1);
        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
          // chunk c + 2's gate and beta a whole chunk before they are stored, after the boxes: the boxes' proxy
          // fence would wait for these loads; round one's, ~2,400 cycles later, finds them landed
          wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
      }
      WSH_MARK(5, ch + 1);
      cta_sync();  // chunk c consumed; chunk c+1 prepared
    }
    return;
  }

  // ---- consumers: warpgroup w owns S^T rows 64 w .. 64 w + 63; this warp rows j0 and j0 + 8.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(W::REG_C));
  const int j0 = 16 * warp + gid;
  const long long rs = (long long)H * DP;
  // R in the wgmma accumulator layout: tile n (S[n >> 3][n & 7]) holds (j0, i), (j0, i + 1), (j0 + 8, i), (j0 + 8, i + 1), i = 8 n + 2 tig.
  float S[2][8][4];  // R by column block (K^T Vt's accumulators)
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) S[a][n][e] = 0.f;
  float lam0 = 1.f, lam1 = 1.f;  // rows j0, j0 + 8: S = lam 2^le R, R held in S[][][]
  int le0 = 0, le1 = 0;
  const int vo[4] = {wsh_toff(tig, j0), wsh_toff(tig, j0 + 8), wsh_toff(tig + 4, j0), wsh_toff(tig + 4, j0 + 8)};
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + W::GB + (ch % W::NBUF) * W::GBUF;
    const float* vsm = sm + W::VB + (ch % W::NBUF) * W::TILE;
    const float* gsc = sm + W::GS + nb * C;
    float* yb = y + ((long long)b * T + t0) * rs + (long long)h * DP;
    WSH_MARK(0, ch);
    if (!sfl[nb]) {
      uint32_t wh[2][4], wl[2][4];
      float iv0, iv1;
      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, vo, tig);
      const float* aph = sm + W::AP + 2 * nb * W::A16;
      const float* apl = aph + W::A16;
      float P[4][4];  // O^T's A Vt part, under Vt''^T's row scales and A''s (zeroed where its group starts)
      float gy[4][2];  // G_t of this thread's y rows
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        gy[nt][0] = gsc[8 * nt + 2 * tig];
        gy[nt][1] = gsc[8 * nt + 2 * tig + 1];
      }
      WSH_MARK(1, ch);
      // ---- O^T = S^T Q^T: 8 k steps x 3 wgmma m64n32k16 in two groups (the pieces of a group are 32 registers);
      // S^T's rows scaled for the pieces, undone with q's step scales afterwards.
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
      float mr0 = 0.f, mr1 = 0.f;  // the rows' largest |S| / 2^le (chunk 0: S is zero)
      if (ch > 0) {  // chunk 0: S is zero
        const uint64_t bqh = wg_desc(sm + W::QH + 2 * nb * W::H16, 128, 4096);  // wsh_qoff2: step groups 4 KB apart
        const uint64_t bql = wg_desc(sm + W::QH + 2 * nb * W::H16 + 512, 128, 4096);
        float m0 = 0.f, m1 = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          m0 = fmaxf(m0, fmaxf(fabsf(S[(i) >> 3][(i) & 7][0]), fabsf(S[(i) >> 3][(i) & 7][1])));
          m1 = fmaxf(m1, fmaxf(fabsf(S[(i) >> 3][(i) & 7][2]), fabsf(S[(i) >> 3][(i) & 7][3])));
        }
        m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
        m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
        m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
        m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
        m0 *= lam0;  // the row's largest |S| / 2^le
        m1 *= lam1;
        mr0 = m0;
        mr1 = m1;
        float s0, inv0, s1, inv1;
        pow2_scale(m0, s0, inv0);
        pow2_scale(m1, s1, inv1);
        s0 *= lam0;  // R lam s = S (s 2^-le): S's pieces
        s1 *= lam1;
        inv0 = ldexp_sat(inv0, le0);  // 1 / (S's scale)
        inv1 = ldexp_sat(inv1, le1);
        // Eight groups of one k step, the pieces in two register buffers: group qb's split runs while group qb - 1's
        // wgmma execute; a buffer is rewritten only after its group has completed (wait_group 1). Two steps a group
        // need 16 registers more than the consumers hold beside S, O, P and Vt'' (else C7512, all serialized).
        uint32_t ah[2][1][4], al[2][1][4];
#pragma unroll
        for (int qb = 0; qb < 8; ++qb) {
          const int bf = qb & 1;
          if (qb >= 2) {
            wg_wait1();
            wg_keep(ah[bf]);
            wg_keep(al[bf]);
          }
#pragma unroll
          for (int u = 0; u < 1; ++u) {
            const int kk = qb + u;
            split_h2(S[(2 * kk) >> 3][(2 * kk) & 7][0] * s0, S[(2 * kk) >> 3][(2 * kk) & 7][1] * s0, ah[bf][u][0], al[bf][u][0]);
            split_h2(S[(2 * kk) >> 3][(2 * kk) & 7][2] * s1, S[(2 * kk) >> 3][(2 * kk) & 7][3] * s1, ah[bf][u][1], al[bf][u][1]);
            split_h2(S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][0] * s0, S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][1] * s0, ah[bf][u][2], al[bf][u][2]);
            split_h2(S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][2] * s1, S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][3] * s1, ah[bf][u][3], al[bf][u][3]);
          }
          if (qb == 7) wsh_zero(P);
          wg_keep(O);
          wg_keep(ah[bf]);
          wg_keep(al[bf]);
          wg_keep(P);
          wg_keep(wh);
          wg_keep(wl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < 1; ++u) {
            const int kk = qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc_at(bqh, 64 * kk), dl = wg_desc_at(bql, 64 * kk);
            wh_mma_n32(O, al[bf][u], dh);
            wh_mma_n32(O, ah[bf][u], dl);
            wh_mma_n32(O, ah[bf][u], dh);
          }
          if (qb == 7) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group
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
        wg_keep(wl);
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
      WSH_MARK(2, ch);
      // ---- S^T = G_C (S^T + Vt''^T K'') in place: R' = R lam 2^(le - e_f) = S / f (f = 2^e_f: Vt'''s row scale
      // times K'''s chunk scale), R' += Vt''^T K'' (2 k steps x 2 column blocks x 3 wgmma m64n64k16), then S = G_C f R'.
      // A row whose R' would pass 2^100 keeps R' there and drops the chunk's increment (its Vt'' rows zeroed here;
      // A Vt, which read them, is done): the increment is below 2^-60 of the row.
      // y's stores: between K^T Vt's commit and its wait, or alone on the last chunk
      auto store_y = [&]() {
        if (n == C) {
          float* yr = yb + 2 * tig * rs + j0;
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            yr[8 * nt * rs] = O[nt][0];
            yr[8 * nt * rs + 8] = O[nt][2];
            yr[(8 * nt + 1) * rs] = O[nt][1];
            yr[(8 * nt + 1) * rs + 8] = O[nt][3];
          }
        } else {
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const int t = 8 * nt + 2 * tig;
            if (t < n) {
              yb[t * rs + j0] = O[nt][0];
              yb[t * rs + j0 + 8] = O[nt][2];
            }
            if (t + 1 < n) {
              yb[(t + 1) * rs + j0] = O[nt][1];
              yb[(t + 1) * rs + j0 + 8] = O[nt][3];
            }
          }
        }
      };
      const bool last = ch + 1 == nchunks;
      const float GC = gsc[C - 1];
      int d0 = 0, d1 = 0;
      if (!last) {
        const int ek = exp_of(sm[W::RK + nb * DP]);
        d0 = le0 - (exp_of(iv0) + ek);
        d1 = le1 - (exp_of(iv1) + ek);
        const int em0 = exp_of(mr0), em1 = exp_of(mr1);
        const bool drop0 = mr0 > 0.f && em0 + d0 > 100, drop1 = mr1 > 0.f && em1 + d1 > 100;
        if (drop0) d0 = 100 - em0;
        if (drop1) d1 = 100 - em1;
        const float g0 = ldexp_sat(lam0, d0), g1 = ldexp_sat(lam1, d1);
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
          for (int kk = 0; kk < 8; ++kk) {
            S[a][kk][0] *= g0;
            S[a][kk][1] *= g0;
            S[a][kk][2] *= g1;
            S[a][kk][3] *= g1;
          }
#pragma unroll
        for (int m = 0; m < 2; ++m) {  // Vt'' rows: registers 0, 2 row j0, 1, 3 row j0 + 8
          wh[m][0] = drop0 ? 0u : wh[m][0];
          wl[m][0] = drop0 ? 0u : wl[m][0];
          wh[m][2] = drop0 ? 0u : wh[m][2];
          wl[m][2] = drop0 ? 0u : wl[m][2];
          wh[m][1] = drop1 ? 0u : wh[m][1];
          wl[m][1] = drop1 ? 0u : wl[m][1];
          wh[m][3] = drop1 ? 0u : wh[m][3];
          wl[m][3] = drop1 ? 0u : wl[m][3];
        }
        const uint64_t bkh = wg_desc(sm + W::KH + nb * W::H16, 128, 512);
        const uint64_t bkl = wg_desc(sm + W::KL + nb * W::H16, 128, 512);
        wg_keep(S[0]);
        wg_keep(S[1]);
        wg_keep(wh);
        wg_keep(wl);
        wg_fence();
#pragma unroll
        for (int m = 0; m < 2; ++m) {
#pragma unroll
          for (int a = 0; a < 2; ++a) {  // columns 64 a ..: 2048 halves a block; steps 16 m ..: 128 halves a step
            const uint64_t dh = wg_desc_at(bkh, 1024 * a + 64 * m), dl = wg_desc_at(bkl, 1024 * a + 64 * m);
            wh_mma_n64(S[a], wl[m], dh);
            wh_mma_n64(S[a], wh[m], dl);
            wh_mma_n64(S[a], wh[m], dh);
          }
        }
        wg_commit();
        WSH_MARK(3, ch);
        store_y();
        wg_wait0();  // K^T Vt in the same branch as its issue: ptxas pairs them only so (else C7515, all serialized)
        wg_keep(S[0]);
        wg_keep(S[1]);
      } else {
        WSH_MARK(3, ch);
        store_y();
      }
      WSH_MARK(4, ch);
      if (last) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      WSH_MARK(6, ch);
      lam0 = GC;
      lam1 = GC;
      le0 -= d0;
      le1 -= d1;
      WSH_MARK(7, ch);
    } else {
      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits), on S
      // itself: S = lam 2^le R (the exponent in two halves, each within the float range), then lam = 1, le = 0.
      {
        const float a0 = ldexp_sat(lam0, le0 / 2), b0 = ldexp_sat(1.f, le0 - le0 / 2);
        const float a1 = ldexp_sat(lam1, le1 / 2), b1 = ldexp_sat(1.f, le1 - le1 / 2);
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
          for (int kk = 0; kk < 8; ++kk) {
            S[a][kk][0] = S[a][kk][0] * a0 * b0;
            S[a][kk][1] = S[a][kk][1] * a0 * b0;
            S[a][kk][2] = S[a][kk][2] * a1 * b1;
            S[a][kk][3] = S[a][kk][3] * a1 * b1;
          }
        lam0 = lam1 = 1.f;
        le0 = le1 = 0;
      }
      const __half* qph = reinterpret_cast<const __half*>(sm + W::QH + 2 * nb * W::H16);
      const __half* qpl = qph + 1024;
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + 2 * nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAH + (2 * nb + 1) * W::H16);
      const float* rq = sm + W::RQ + nb * C;
      const float* rka = sm + W::RKA + nb * C;
      const float* gsm = cur + W::GR;
      const float* bsm = cur + W::BR;
      for (int t = 0; t < n; ++t) {
        const float g = gsm[t];
        const float bt = bsm[t];
        const float cv0 = bt * vsm[wsh_toff(t, j0)];
        const float cv1 = bt * vsm[wsh_toff(t, j0 + 8)];
        float p0 = 0.f, p1 = 0.f;
#pragma unroll
        for (int i8 = 0; i8 < 16; ++i8) {
          const int i = 8 * i8 + 2 * tig;
          const int o = wsh_qoff(t, i);  // even: a pair of halves
          const int oq = wsh_qoff2(t, i);
          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + oq));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + oq));
          const float2 ka = __half22float2(*reinterpret_cast<const __half2*>(kph + o));
          const float2 kb = __half22float2(*reinterpret_cast<const __half2*>(kpl + o));
          const float2 qx = make_float2((qa.x + qb.x) * rq[t], (qa.y + qb.y) * rq[t]);
          const float2 kx = make_float2((ka.x + kb.x) * rka[t], (ka.y + kb.y) * rka[t]);
          S[(i8) >> 3][(i8) & 7][0] = fmaf(cv0, kx.x, S[(i8) >> 3][(i8) & 7][0] * g);
          S[(i8) >> 3][(i8) & 7][1] = fmaf(cv0, kx.y, S[(i8) >> 3][(i8) & 7][1] * g);
          S[(i8) >> 3][(i8) & 7][2] = fmaf(cv1, kx.x, S[(i8) >> 3][(i8) & 7][2] * g);
          S[(i8) >> 3][(i8) & 7][3] = fmaf(cv1, kx.y, S[(i8) >> 3][(i8) & 7][3] * g);
          p0 = fmaf(qx.x, S[(i8) >> 3][(i8) & 7][0], p0);
          p0 = fmaf(qx.y, S[(i8) >> 3][(i8) & 7][1], p0);
          p1 = fmaf(qx.x, S[(i8) >> 3][(i8) & 7][2], p1);
          p1 = fmaf(qx.y, S[(i8) >> 3][(i8) & 7][3], p1);
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
    WSH_MARK(5, ch + 1);
    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}

// A (B, T, H, 128) fp32 tensor viewed as (32 columns, T, 4 column blocks, H, B), so that one box (32, 32, 4, 1, 1)
// lands a chunk of one head as four blocks of 32 columns x 32 steps, 4 KB apart, 128-byte swizzle.
CUtensorMap wsh_map(const torch::Tensor& x, int B, int T, int H) {
  CUtensorMap m;
  const cuuint64_t dims[5] = {32, (cuuint64_t)T, 4, (cuuint64_t)H, (cuuint64_t)B};
  const cuuint64_t strides[4] = {(cuuint64_t)H * 512, 128, 512, (cuuint64_t)T * H * 512};
  const cuuint32_t box[5] = {32, 32, 4, 1, 1};
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 5, x.data_ptr<float>(), dims, strides,
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
      tq, tk, tv, gate.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(), T, H);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
// ---------------------------------------------------------------------------------------------
// v7 parallel (attention-like) form for short sequences.  One block per (b, h, tile of RT query
// rows [t0, t0+nr)).  With D(t,s) = prod_{r=s+1..t} g_r (per column j for channel gates):
//   y_t = sum_{s<=t0} (q_t.k_s) F(t) E(s) c_s v_s  +  sum_{t0<s<=t} (q_t.k_s) D(t,s) c_s v_s
// where E(s) = prod_{r=s+1..t0} g_r (suffix products, a segmented scan over s), F(t) =
// prod_{r=t0+1..t} g_r and D(t,s) for in-tile s are built by walking s backwards multiplying
// gates (c_s = beta_s for scalar gates, 1 for channel gates).  Every decay is a product of
// gates (no ratios, no logs), so tiny gates underflow to correctly tiny/zero terms.
// Phases (barriers between): stage inputs in shared memory (cp.async) | dots q_t.k_s for all
// s < t0+nr, segment products of the suffix scan | scan carries, E(s) folded into v (channel) or
// into c_s (scalar) | partial sums over s<=t0 split KS ways | reduce, in-tile part, store.
template <bool CH, int RT, int NT>
__global__ void __launch_bounds__(NT, 2)
par_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
           const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
           int T, int H, int D, int DS, int ntile, bool vec) {
  extern __shared__ float4 par_smem4[];
  float* sm = reinterpret_cast<float*>(par_smem4);
  const int tid = threadIdx.x;
  const int tile = blockIdx.x % ntile;
  const int bh = blockIdx.x / ntile;
  const int h = bh % H;
  const int b = bh / H;
  const int t0 = tile * RT;
  const int nr = min(RT, T - t0);
  const int L = t0 + nr;       // keys 0..L-1 are needed by this tile
  const int Lm = t0 + 1;       // keys 0..t0 go through the scan / main sum
  const int NCOL = CH ? D : 1; // independent gate columns
  const int P = min(16, NT / NCOL);  // scan segments per column
  const int KS = NT / D;             // s-splits of the main sum

  float* qs = sm;                       // RT x DS
  float* ks = qs + RT * DS;             // T x DS
  float* vs = ks + T * DS;              // T x DS (channel: becomes E*v for s <= t0)
  float* dt = vs + T * DS;              // T x RT: dt[s*RT + r] = q_{t0+r} . k_s
  float* gs = dt + T * RT;              // channel: T x DS; scalar: T
  float* bs = gs + (CH ? T * DS : T);   // scalar: beta (T), then coef (T)
  float* cf = bs + (CH ? 0 : T);
  float* tot = cf + (CH ? 0 : T);       // P x NCOL segment products
  float* red = tot + NT;                // KS x RT x D partial sums

  const long long rs = (long long)H * D;
  const long long hb = (long long)b * T * rs + (long long)h * D;
  if (vec) {
    const int D4 = D >> 2;
    for (int i = tid; i < RT * D4; i += NT) {
      const int r = i / D4;
      const int e = (i - r * D4) << 2;
      if (r < nr) __pipeline_memcpy_async(qs + r * DS + e, q + hb + (long long)(t0 + r) * rs + e, 16);
      else *reinterpret_cast<float4*>(qs + r * DS + e) = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    for (int i = tid; i < L * D4; i += NT) {
      const int s = i / D4;
      const int e = (i - s * D4) << 2;
      const long long o = hb + (long long)s * rs + e;
      __pipeline_memcpy_async(ks + s * DS + e, k + o, 16);
      __pipeline_memcpy_async(vs + s * DS + e, v + o, 16);
      if (CH) __pipeline_memcpy_async(gs + s * DS + e, gate + o, 16);
    }
  } else {
    const int DQ = (D + 3) & ~3;  // q/k padded with zeros to a multiple of 4 for the float4 dots
    for (int i = tid; i < RT * DQ; i += NT) {
      const int r = i / DQ;
      const int e = i - r * DQ;
      qs[r * DS + e] = (r < nr && e < D) ? q[hb + (long long)(t0 + r) * rs + e] : 0.f;
    }
    for (int i = tid; i < L * DQ; i += NT) {
      const int s = i / DQ;
      const int e = i - s * DQ;
      const long long o = hb + (long long)s * rs + e;
      const bool in = e < D;
      ks[s * DS + e] = in ? k[o] : 0.f;
      vs[s * DS + e] = in ? v[o] : 0.f;
      if (CH) gs[s * DS + e] = in ? gate[o] : 1.f;
    }
  }
  if (!CH) {
    for (int s = tid; s < L; s += NT) {
      const long long o = ((long long)b * T + s) * H + h;
      gs[s] = gate[o];
      bs[s] = beta[o];
    }
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();

  // Phase 1a: dots q_t . k_s, thread per key s, all RT rows (padded rows of q are 0).
  const int DQ4 = (D + 3) >> 2;
  for (int s = tid; s < L; s += NT) {
    float acc[RT];
#pragma unroll
    for (int r = 0; r < RT; ++r) acc[r] = 0.f;
    const float4* kr = reinterpret_cast<const float4*>(ks + s * DS);
    for (int d4 = 0; d4 < DQ4; ++d4) {
      const float4 kk = kr[d4];
#pragma unroll
      for (int r = 0; r < RT; ++r) {
        const float4 qq = reinterpret_cast<const float4*>(qs + r * DS)[d4];
        acc[r] = fmaf(qq.x, kk.x, acc[r]);
        acc[r] = fmaf(qq.y, kk.y, acc[r]);
        acc[r] = fmaf(qq.z, kk.z, acc[r]);
        acc[r] = fmaf(qq.w, kk.w, acc[r]);
      }
    }
    float4* dd = reinterpret_cast<float4*>(dt + s * RT);
#pragma unroll
    for (int r4 = 0; r4 < RT / 4; ++r4)
      dd[r4] = make_float4(acc[4 * r4], acc[4 * r4 + 1], acc[4 * r4 + 2], acc[4 * r4 + 3]);
  }

  // Phase 1b: suffix scan E(u) = prod_{w=u..t0} x_w, x_w = g_{w+1} (w < t0), x_{t0} = 1.
  // Thread (p, j): segment p of column j; here the segment product.
  const int SL = (Lm + P - 1) / P;
  {
    const int it = NT - 1 - tid;  // P * NCOL <= NT items, on the high tids (the dots use the low ones)
    if (it < P * NCOL) {
      const int p = it / NCOL;
      const int j = it - p * NCOL;
      const int lo = p * SL;
      const int hi = min(lo + SL, t0);  // x_{t0} = 1 contributes nothing
      float pr = 1.f;
      for (int u = lo; u < hi; ++u) pr *= CH ? gs[(u + 1) * DS + j] : gs[u + 1];
      tot[it] = pr;
    }
  }
  __syncthreads();

  // Phase 2: carries (product of the later segments' totals), then walk the segment backwards.
  for (int it = tid; it < P * NCOL; it += NT) {
    const int p = it / NCOL;
    const int j = it - p * NCOL;
    float e = 1.f;
    for (int pp = P - 1; pp > p; --pp) e *= tot[pp * NCOL + j];
    const int lo = p * SL;
    const int hi = min(lo + SL, Lm);
    for (int u = hi - 1; u >= lo; --u) {
      if (u < t0) e *= CH ? gs[(u + 1) * DS + j] : gs[u + 1];
      if (CH) vs[u * DS + j] *= e;
      else cf[u] = bs[u] * e;
    }
  }
  __syncthreads();

  // Phase 3: partial sums over s <= t0, thread (ks, j), RT rows each.
  const int SB = (Lm + KS - 1) / KS;
  for (int it = tid; it < KS * D; it += NT) {
    const int kq = it / D;
    const int j = it - kq * D;
    float acc[RT];
#pragma unroll
    for (int r = 0; r < RT; ++r) acc[r] = 0.f;
    const int lo = kq * SB;
    const int hi = min(lo + SB, Lm);
    for (int s = lo; s < hi; ++s) {
      const float w = CH ? vs[s * DS + j] : cf[s] * vs[s * DS + j];
      const float4* dd = reinterpret_cast<const float4*>(dt + s * RT);
#pragma unroll
      for (int r4 = 0; r4 < RT / 4; ++r4) {
        const float4 a = dd[r4];
        acc[4 * r4] = fmaf(a.x, w, acc[4 * r4]);
        acc[4 * r4 + 1] = fmaf(a.y, w, acc[4 * r4 + 1]);
        acc[4 * r4 + 2] = fmaf(a.z, w, acc[4 * r4 + 2]);
        acc[4 * r4 + 3] = fmaf(a.w, w, acc[4 * r4 + 3]);
      }
    }
#pragma unroll
    for (int r = 0; r < RT; ++r) red[(kq * RT + r) * D + j] = acc[r];
  }
  __syncthreads();

  // Phase 4: thread per (r, j): reduce, in-tile part walking s backwards, scale by F(t), store.
  for (int it = tid; it < nr * D; it += NT) {
    const int r = it / D;
    const int j = it - r * D;
    float mn = 0.f;
    for (int kq = 0; kq < KS; ++kq) mn += red[(kq * RT + r) * D + j];
    const int t = t0 + r;
    float d = 1.f, acc = 0.f;
    for (int s = t; s > t0; --s) {
      const float bv = CH ? vs[s * DS + j] : bs[s] * vs[s * DS + j];
      acc = fmaf(dt[s * RT + r], bv * d, acc);
      d *= CH ? gs[s * DS + j] : gs[s];
    }
    y[hb + (long long)t * rs + j] = fmaf(d, mn, acc);
  }
}

// Shared-memory row stride: D rounded up to 4, plus 4 more when that makes an odd number of float4s
// per row (conflict-free LDS.128 in the dots), unless only the unpadded layout fits in 48 KB (no
// cudaFuncSetAttribute call then; e.g. the channel seed shape).
inline size_t par_smem_floats(bool ch, int nt, int T, int D, int RT, int ds) {
  return (size_t)RT * ds + 2 * (size_t)T * ds + (size_t)T * RT + (ch ? (size_t)T * ds : 3 * (size_t)T) + nt +
         (size_t)(nt / D) * RT * D;
}

inline int par_ds(bool ch, int nt, int T, int D, int RT) {
  const int d4 = (D + 3) & ~3;
  if (((d4 >> 2) & 1) == 1) return d4;
  const size_t lim = 48 * 1024 / sizeof(float);
  if (par_smem_floats(ch, nt, T, D, RT, d4 + 4) > lim && par_smem_floats(ch, nt, T, D, RT, d4) <= lim) return d4;
  return d4 + 4;
}

inline size_t par_smem_bytes(bool ch, int nt, int T, int D, int RT) {
  return par_smem_floats(ch, nt, T, D, RT, par_ds(ch, nt, T, D, RT)) * sizeof(float);
}

template <bool CH, int RT, int NT>
void par_launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                const float* beta, torch::Tensor& y, int B, int T, int H, int D) {
  const int ds = par_ds(CH, NT, T, D, RT);
  const int ntile = (T + RT - 1) / RT;
  const size_t smem = par_smem_bytes(CH, NT, T, D, RT);
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CH) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  const bool vec = (D % 4 == 0) && (al % 16 == 0);
  auto kern = par_kernel<CH, RT, NT>;
  if (smem > 48 * 1024)
    C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H * ntile, NT, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta,
      y.data_ptr<float>(), T, H, D, ds, ntile, vec);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

constexpr int kParNT = 256;
constexpr int kParMaxT = 256;
constexpr size_t kParMaxSmem = 160 * 1024;

// Parallel form when T is short and everything fits in shared memory; true if launched.
template <bool CH>
bool par_dispatch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                  const float* beta, torch::Tensor& y, int B, int T, int H, int D) {
  if (T > kParMaxT) return false;
  // Rows per block: the largest of 16/8/4 that still gives >= 2 blocks per SM (132 SMs).
  const long long bhc = (long long)B * H;
  int rt = 16;
  while (rt > 4 && bhc * ((T + rt - 1) / rt) < 264) rt >>= 1;
  if (par_smem_bytes(CH, kParNT, T, D, rt) > kParMaxSmem) return false;
  if (rt == 16) par_launch<CH, 16, kParNT>(q, k, v, gate, beta, y, B, T, H, D);
  else if (rt == 8) par_launch<CH, 8, kParNT>(q, k, v, gate, beta, y, B, T, H, D);
  else par_launch<CH, 4, kParNT>(q, k, v, gate, beta, y, B, T, H, D);
  return true;
}


// ---------------------------------------------------------------------------------------------
// v12 seed path (T <= KB*NW, D <= 32, D % 4 == 0, 16-byte aligned, < 2^31 elements): one block per
// (b, h, tile of RT query rows [t0, t0+RT)), tiles launched heaviest (latest) first, NW warps; warp w
// owns the key block [w*KB, w*KB+KB) and works alone (a warp-private strip of shared memory) until
// ONE block barrier before the output:
//   pivot p_w = min(w*KB+KB-1, t0); warp bt = t0/KB holds the tile rows (KB % RT == 0).
//   main_w[r][j] = sum_{s0<=s<=p_w} c_s (q_{t0+r}.k_s) E_j(s) v_s[j],  E_j(s) = prod_{u=s+1..p_w} g_u[j]
//   Q_w[j] = prod_{u=s0..p_w} g_u[j]   (where the backward decay walk ends)
//   warp bt: F_r[j] = prod_{u=t0+1..t0+r} g_u[j], in_r[j] = in-tile keys t0 < s <= t0+r with their
//   direct products; writes out = F*main + in and dq = Q*F; other warps out = main, dq = Q.
//   y[t0+r][j] = Horner over w = 0..bt: acc = acc*dq_w + out_w   (acc starts at 0).
// Every decay is a product of gates (<= 1) applied by multiplication only: no ratios, no logs, so an
// underflow only drops a contribution whose true size is below ~1e-38 relative to its operands.
// Per warp: coalesced float4 loads of its k/v(/gate) rows and the q tile, all issued at once, into its
// strip | __syncwarp | dots -> W | __syncwarp | decay walk + accumulation, in-tile part (warp bt) |
// __syncwarp | out/dq over its strip | __syncthreads | Horner + store y.
template <int KB, int RT, int D4M, bool CH>
struct SeedLayout {
  static constexpr int DS = 4 * D4M + ((D4M & 1) ? 0 : 4);  // k/q row stride: odd number of float4s
  static constexpr int DV = 4 * D4M;                          // v/gate row stride
  static constexpr int K = 0;
  static constexpr int V = K + KB * DS;
  static constexpr int G = V + KB * DV;
  static constexpr int BE = G + (CH ? KB * DV : KB);
  static constexpr int Q = BE + (CH ? 0 : KB);
  static constexpr int W = Q + RT * DS;
  static constexpr int END = W + KB * RT;
  static constexpr int OUTN = 2 * RT * 32;
  static constexpr int WARP = ((END > OUTN ? END : OUTN) + 3) & ~3;
  static_assert(Q % 4 == 0 && W % 4 == 0 && V % 4 == 0 && G % 4 == 0, "align");
};

template <bool CH, int RT, int KB, int NW, int D4M, int MINB>
__global__ void __launch_bounds__(NW * 32, MINB)
seed_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
            const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
            int T, int H, int D, int ntile) {
  using L = SeedLayout<KB, RT, D4M, CH>;
  constexpr int LPK = 32 / KB;   // dot lanes per key
  constexpr int RPL = RT / LPK;  // rows per dot lane
  constexpr int DS = L::DS, DV = L::DV;
  static_assert(KB * LPK == 32 && RT % LPK == 0 && KB % RT == 0 && RT % 4 == 0, "shape");
  static_assert(RPL == 1 || RPL == 2 || RPL == 4, "RPL");
  extern __shared__ float4 seed_smem4[];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  float* sw = reinterpret_cast<float*>(seed_smem4) + warp * L::WARP;
  const int h = blockIdx.x;                    // grid (H, B, ntile): no integer divisions, and the
  const int b = blockIdx.y;                    // heaviest (latest) tiles are dispatched first
  const int tile = ntile - 1 - (int)blockIdx.z;
  const int t0 = tile * RT;
  const int bt = t0 / KB;
  const int D4 = D >> 2;
  const int rs = H * D;
  const int hb = b * T * rs + h * D;
  const int gb = b * T * H + h;

  if (warp <= bt) {
    const int s0 = warp * KB;
    const int p = min(s0 + KB - 1, t0);
    const int nk = min(KB, min(T, t0 + RT) - s0);  // rows of k/v/gate this warp needs (>= 1)
    // ---- all global loads at once: k, v (, gate) rows s0..s0+nk-1, q rows t0.., scalar gate/beta ----
    {
      constexpr int NI = KB * D4M;
      float4 kx[(NI + 31) / 32], vx[(NI + 31) / 32], gx[(NI + 31) / 32];
#pragma unroll
      for (int m = 0; m < (NI + 31) / 32; ++m) {
        const int idx = lane + 32 * m;
        const int row = idx / D4M;
        const int c4 = idx - row * D4M;
        const bool ok = idx < NI && row < nk && c4 < D4;
        const int o = hb + (s0 + row) * rs + 4 * c4;
        const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
        kx[m] = ok ? __ldg(reinterpret_cast<const float4*>(k + o)) : z;
        vx[m] = ok ? __ldg(reinterpret_cast<const float4*>(v + o)) : z;
        if (CH) gx[m] = ok ? __ldg(reinterpret_cast<const float4*>(gate + o)) : z;
      }
      constexpr int NQ = RT * D4M;
      float4 qx[(NQ + 31) / 32];
#pragma unroll
      for (int m = 0; m < (NQ + 31) / 32; ++m) {
        const int idx = lane + 32 * m;
        const int row = idx / D4M;
        const int c4 = idx - row * D4M;
        const bool ok = idx < NQ && t0 + row < T && c4 < D4;
        qx[m] = ok ? __ldg(reinterpret_cast<const float4*>(q + hb + (t0 + row) * rs + 4 * c4))
                   : make_float4(0.f, 0.f, 0.f, 0.f);
      }
      float sg = 0.f;
      if (!CH) {
        const int i = lane % KB;
        const bool ok = lane < 2 * KB && i < nk;
        const float* src = (lane < KB) ? gate : beta;
        sg = ok ? __ldg(src + gb + (s0 + i) * H) : 0.f;
      }
      // ---- into the warp's strip ----
#pragma unroll
      for (int m = 0; m < (NI + 31) / 32; ++m) {
        const int idx = lane + 32 * m;
        const int row = idx / D4M;
        const int c4 = idx - row * D4M;
        if (idx < NI) {
          *reinterpret_cast<float4*>(sw + L::K + row * DS + 4 * c4) = kx[m];
          *reinterpret_cast<float4*>(sw + L::V + row * DV + 4 * c4) = vx[m];
          if (CH) *reinterpret_cast<float4*>(sw + L::G + row * DV + 4 * c4) = gx[m];
        }
      }
#pragma unroll
      for (int m = 0; m < (NQ + 31) / 32; ++m) {
        const int idx = lane + 32 * m;
        const int row = idx / D4M;
        const int c4 = idx - row * D4M;
        if (idx < NQ) *reinterpret_cast<float4*>(sw + L::Q + row * DS + 4 * c4) = qx[m];
      }
      if (!CH && lane < 2 * KB) sw[L::G + lane] = sg;  // G then BE (contiguous, KB each)
    }
    __syncwarp();

    // ---- dots q_{t0+r} . k_s: lane (key sl, row group rg), RPL rows, two accumulators per row ----
    {
      const int sl = lane % KB;
      const int rg = lane / KB;
      const int s = s0 + sl;
      float da[RPL], db[RPL];
#pragma unroll
      for (int i = 0; i < RPL; ++i) { da[i] = 0.f; db[i] = 0.f; }
      const float4* kr = reinterpret_cast<const float4*>(sw + L::K + sl * DS);
#pragma unroll
      for (int f = 0; f < D4M; ++f) {
        const float4 kk = kr[f];
#pragma unroll
        for (int i = 0; i < RPL; ++i) {
          const float4 qq = reinterpret_cast<const float4*>(sw + L::Q + (rg * RPL + i) * DS)[f];
          float& a = (f & 1) ? db[i] : da[i];
          a = fmaf(qq.x, kk.x, a);
          a = fmaf(qq.y, kk.y, a);
          a = fmaf(qq.z, kk.z, a);
          a = fmaf(qq.w, kk.w, a);
        }
      }
      const float cs = CH ? 1.f : sw[L::BE + sl];
      float wv[RPL];
#pragma unroll
      for (int i = 0; i < RPL; ++i) wv[i] = (s <= t0 + rg * RPL + i) ? (da[i] + db[i]) * cs : 0.f;
      float* wdst = sw + L::W + sl * RT + rg * RPL;
      if constexpr (RPL == 1) {
        wdst[0] = wv[0];
      } else if constexpr (RPL == 2) {
        *reinterpret_cast<float2*>(wdst) = make_float2(wv[0], wv[1]);
      } else {
        *reinterpret_cast<float4*>(wdst) = make_float4(wv[0], wv[1], wv[2], wv[3]);
      }
    }
    __syncwarp();

    // ---- decay walk over keys s0..p (descending), all RT rows; lane = column ----
    const int jc = min(lane, DV - 1);
    const int nmain = p - s0 + 1;
    float acc[RT];
#pragma unroll
    for (int r = 0; r < RT; ++r) acc[r] = 0.f;
    float d = 1.f;
    auto walk = [&](auto full) {
      constexpr bool FULL = decltype(full)::value;
#pragma unroll
      for (int i = KB - 1; i >= 0; --i) {
        if (FULL || i < nmain) {
          float w[RT];
#pragma unroll
          for (int r4 = 0; r4 < RT / 4; ++r4) {
            const float4 a = *reinterpret_cast<const float4*>(sw + L::W + i * RT + 4 * r4);
            w[4 * r4] = a.x; w[4 * r4 + 1] = a.y; w[4 * r4 + 2] = a.z; w[4 * r4 + 3] = a.w;
          }
          const float vd = sw[L::V + i * DV + jc] * d;
#pragma unroll
          for (int r = 0; r < RT; ++r) acc[r] = fmaf(w[r], vd, acc[r]);
          d *= CH ? sw[L::G + i * DV + jc] : sw[L::G + i];
        }
      }
    };
    if (nmain == KB) walk(std::true_type{});   // every block but the tile's: no predicates
    else walk(std::false_type{});
    float outv[RT], dq[RT];
#pragma unroll
    for (int r = 0; r < RT; ++r) { outv[r] = acc[r]; dq[r] = d; }
    if (warp == bt) {
      const int i0 = t0 - s0;  // tile row 0 within the block
#pragma unroll
      for (int r = 1; r < RT; ++r) {
        float dd = 1.f, in = 0.f;
#pragma unroll
        for (int i = r; i >= 1; --i) {
          const float wt = sw[L::W + (i0 + i) * RT + r];
          const float vt = sw[L::V + (i0 + i) * DV + jc];
          in = fmaf(wt * vt, dd, in);
          dd *= CH ? sw[L::G + (i0 + i) * DV + jc] : sw[L::G + i0 + i];
        }
        outv[r] = fmaf(dd, acc[r], in);
        dq[r] = d * dd;
      }
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      sw[r * 32 + lane] = outv[r];
      sw[RT * 32 + r * 32 + lane] = dq[r];
    }
  }
  __syncthreads();

  // ---- Horner over the key blocks, one thread per (row, column) ----
  const float* sm = reinterpret_cast<const float*>(seed_smem4);
  for (int idx = threadIdx.x; idx < RT * 32; idx += NW * 32) {
    const int r = idx >> 5;
    const int j = idx & 31;
    const int t = t0 + r;
    if (j < D && t < T) {
      float a = 0.f;
#pragma unroll
      for (int w = 0; w < NW; ++w)
        if (w <= bt) a = fmaf(a, sm[w * L::WARP + RT * 32 + r * 32 + j], sm[w * L::WARP + r * 32 + j]);
      y[hb + t * rs + j] = a;
    }
  }
}

template <bool CH, int RT, int KB, int NW, int D4M, int MINB>
void seed_launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                 const float* beta, torch::Tensor& y, int B, int T, int H, int D, int ntile) {
  using L = SeedLayout<KB, RT, D4M, CH>;
  constexpr size_t smem = sizeof(float) * (size_t)NW * L::WARP;
  auto kern = seed_kernel<CH, RT, KB, NW, D4M, MINB>;
  if constexpr (smem > 48 * 1024) {
    // Once per instantiation (a thread-safe static initialiser), so later calls pay no host-side cost.
    static const bool attr_set = [kern] {
      C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      return true;
    }();
    (void)attr_set;
  }
  kern<<<dim3(H, B, ntile), NW * 32, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta,
      y.data_ptr<float>(), T, H, D, ntile);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <bool CH>
bool seed_dispatch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
                   const float* beta, torch::Tensor& y, int B, int T, int H, int D) {
  constexpr int RT = 8, KB = 16, NW = 8, MINB = 1;
  if (T > KB * NW || D > 32 || (D & 3) != 0) return false;
  if (q.numel() >= (int64_t)1 << 31) return false;  // 32-bit offsets
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CH) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  if (al % 16 != 0) return false;
  if (B > 65535) return false;  // grid (H, B, ntile)
  const int ntile = (T + RT - 1) / RT;
  if (D <= 24) seed_launch<CH, RT, KB, NW, 6, MINB>(q, k, v, gate, beta, y, B, T, H, D, ntile);
  else seed_launch<CH, RT, KB, NW, 8, MINB>(q, k, v, gate, beta, y, B, T, H, D, ntile);
  return true;
}

}  // namespace
"""

DISPATCH_SRC = r"""
void sgd_v79b_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta, torch::Tensor y) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda() && gate.is_cuda() && beta.is_cuda() && y.is_cuda(),
              "CUDA tensors");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
              v.scalar_type() == torch::kFloat32 && gate.scalar_type() == torch::kFloat32 &&
              beta.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
              beta.is_contiguous() && y.is_contiguous(), "contiguous tensors");
  TORCH_CHECK(q.dim() == 4, "q is (B,T,H,D)");
  const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
  TORCH_CHECK(D >= 1 && D <= 128, "head size must be in [1, 128]");
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes() && y.sizes() == q.sizes() &&
              gate.numel() == (int64_t)B * T * H && beta.numel() == (int64_t)B * T * H, "shapes");
  if (B == 0 || T == 0 || H == 0) return;
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  TORCH_CHECK(prop->major == 9 && prop->minor == 0, "built for sm_90a (H100, H200): wgmma");
  // Short sequences: v7's parallel form (one launch of short parallel work).
  // Seed-sized problems: v12's one-barrier parallel form; other short sequences: v7's.
  if (seed_dispatch<false>(q, k, v, gate, beta.data_ptr<float>(), y, B, T, H, D)) return;
  if (par_dispatch<false>(q, k, v, gate, beta.data_ptr<float>(), y, B, T, H, D)) return;
  if (D <= 32) {
    launch_pipe<32, false>(q, k, v, gate, beta, y, B, T, H, D);
  } else if ((D == 64 || D == 128) && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                                        reinterpret_cast<uintptr_t>(v.data_ptr<float>()) | reinterpret_cast<uintptr_t>(y.data_ptr<float>())) % 16 == 0)) {
    if (D == 64) launch_wsg<64>(q, k, v, gate, beta, y, B, T, H);
    else launch_wsh(q, k, v, gate, beta, y, B, T, H);
  } else if (D <= 64) {
    launch_ws<false>(q, k, v, gate, beta, y, B, T, H, D);
  } else {
    launch_wg<false>(q, k, v, gate, beta, y, B, T, H, D);
  }
}
"""

CPP_SRC = "void sgd_v79b_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta, torch::Tensor y);"

_ext = load_inline(
    name="sgd_v79b_gblate",
    cpp_sources=[CPP_SRC],
    cuda_sources=[CUDA_SRC + DISPATCH_SRC],
    functions=["sgd_v79b_forward"],
    extra_cuda_cflags=["-O3", "-lineinfo", "--ptxas-options=-v", "-gencode=arch=compute_90a,code=sm_90a"],
    extra_ldflags=["-lcuda"],  # cuTensorMapEncodeTiled
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        q = q.contiguous()
        y = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        _ext.sgd_v79b_forward(q, k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous(), y)
        return y
