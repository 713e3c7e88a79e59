# v17_pair_tiles (channel gates): v16_lean_frags with the tensor-core kernel's D = 128 tiling changed (T > 256, DP = 128
# only); the seed kernel (v12), the parallel kernel (v7) and the DP = 32 / 64 instantiations are v16's (MW = 1 below).
# Status: compiled (sm_90; DP = 128 spills 32-40 bytes at the 255-register cap, none in the HMMA span for scalar),
# index-faithful CPU simulation; not yet run on a GPU.
#
# Why: at DP = 128 v16 runs 16 warps (m-tile mt = 16 state rows j x half the i range each, 128-register cap).  Every
# B fragment of the three big products (Q S0: Q^T, K^T Vt: K, A Vt: A^T) is loaded from shared memory by each of the 8
# m-tile warps that share an i half, i.e. 8 times: ~4,100 of the ~8,500 shared-memory wavefronts per SM per chunk
# (v9's ncu at large: "Mem Busy" 57% at ~8,100 wavefronts per chunk, 1 wavefront per cycle), next to a tensor pipe
# ~38% busy and issue slots ~47% busy.  The shared-memory pipe is the most loaded unit of the SM.
# Change (DP = 128): 8 warps of 256 threads (255-register budget instead of 128), each warp owning MW = 2 m-tiles
# (32 state rows x 64 i; S^T 64 registers per thread): each B fragment is loaded once per warp and feeds the MMA
# triples of both m-tiles, halving the fragment traffic of Q S0, A Vt and K^T Vt (-2,100 wavefronts per chunk, ~-25%
# of all shared traffic) and their LDS.128 count.  Per m-tile every MMA has v16's operands, chains and order, and
# every fp32 operation is v16's, so the output should be bitwise v16's (= v13's) at every shape.  The q/k split,
# gate scan, VS split, A tiles (6 of 8 warps), loads and stores are v16's code with NT = 256 (their item loops have
# twice the trips); channel gates: the per-column scan takes 2 column sets per thread (4 threads per column).
# The Vt fragments are loaded after Q S0 (fewer live registers there); v16's opaque-tid recomputation is kept.
# Instruction counts, registers, checks and the prediction: NOTES.md, section "v17_pair_tiles".
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_pipeline.h>
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

// v16 shared-memory layout (floats).  Every MMA operand that several warps read is stored once per chunk already
// split (hi, lo) and interleaved so that one fragment is one LDS.128 (A-tile K: LDS.32), mostly without register
// moves (the A-tile A operand at DP = 128, from QI, still needs them; at DP <= 64 it comes from QP):
//   QI  [t][QS]   q rows: per feature pair {hi(i), hi(i+1), lo(i), lo(i+1)} at 2i          (Q S0 B, A-tile A)
//   KT  [i][64]   k columns: 16 slots g = 4 (s / 8) + s % 4 (s % 8 < 4) of {hi(s), hi(s+4), lo(s), lo(s+4)},
//                 slot g of column i at 4 (g ^ sw(i)), sw(i) = 2 ((i >> 1) & 3) ^ 4 (i & 1)  (K^T Vt B, A-tile B)
//   AMS [t][AS]   A = causal(Q K^T): per (ks, tig) {hi(s), hi(s+4), lo(s), lo(s+4)}, s = 8 ks + tig  (A Vt B)
//   VS  [mt][ks][hi quad | lo quad][lane]  Vt^T A-operand quads {(j0, s0), (j0+8, s0), (j0, s0+4), (j0+8, s0+4)},
//                 j0 = 16 mt + gid, s0 = 8 ks + tig                                          (K^T Vt, A Vt A)
//   QP  [tp][QPS] (DP <= 64) q row pairs (t, t+8), tp = t % 8 + 8 (t / 16): per feature pair hi quad
//                 {q[t][i], q[t+8][i], q[t][i+1], q[t+8][i+1]}, then lo quad                   (A-tile A operand)
// q and k land raw (cp.async, single buffer RQ / RK, read only by the split), v / gate / beta double-buffered;
// channel gates (VSPLIT): the cumulative G in its own double buffer GC, the raw gates kept for the safe path.
template <int DP, bool CHAN>
struct Cfg {
  static constexpr int C = 32;            // chunk length (== warp size: the scalar gate scan is one warp)
  static constexpr int NC = DP;           // columns per CTA: the whole head
  static constexpr int MT = NC / 16;      // m-tiles of S^T rows
  // v17: m-tiles per warp.  DP = 128: 2 (8 warps, 256 threads, up to 255 registers), so every B fragment of
  // Q S0, K^T Vt and A Vt loaded from shared memory feeds two MMAs (half the fragment traffic of v16's 16 warps).
  static constexpr int MW = DP == 128 ? 2 : 1;
  static constexpr int MTW = MT / MW;     // warp rows (each MW m-tiles tall)
  static constexpr int KH = KHOf<DP>::value;
  static constexpr int NW = MTW * KH;
  static constexpr int SCN = (NC + NW * 8 - 1) / (NW * 8);  // channel gate scan: column sets per thread (4 per column)
  static constexpr int NT = NW * 32;
  static constexpr int IH = DP / KH;
  static constexpr int NI = IH / 8;       // 8-wide i tiles per warp
  static constexpr int NTT = C / 8;       // 8-wide t tiles
  static constexpr int NKS = C / 8;       // 8-deep s steps
  static constexpr int RS = DP + 8;       // raw q / k row stride (split reads conflict-free)
  static constexpr int NCS = NC + 8;
  static constexpr int NOS = NC + 4;
  static constexpr int QS = 2 * DP + 16;  // QI row stride (== 16 mod 32)
  static constexpr int KTS = 64;          // KT column stride (XOR-swizzled slots instead of padding)
  static constexpr int AS = 80;           // AMS row stride (== 16 mod 32)
  // Vt pre-split in shared memory (VS); not for channel gates at DP = 128: the 32 KB do not fit there.
  static constexpr bool VSPLIT = !(CHAN && DP == 128);
  static constexpr int RQ = 0;
  static constexpr int RK = C * RS;
  static constexpr int BUF0 = 2 * C * RS;  // two buffers of: v, gate (channel C x NCS, scalar C), beta (scalar)
  static constexpr int VOFF = 0;
  static constexpr int GOFF = C * NCS;
  static constexpr int BOFF = GOFF + (CHAN ? C * NCS : C);
  static constexpr int BUF = BOFF + (CHAN ? 0 : C);
  static constexpr int QI = BUF0 + 2 * BUF;
  static constexpr int KT = QI + C * QS;
  static constexpr int VS = KT + DP * KTS;
  static constexpr int AMS = VS + (VSPLIT ? MT * NKS * 2 * 128 : 0);
  static constexpr int OB = AMS + C * AS;     // KH slices of C x NOS
  static constexpr int GS = OB + KH * C * NOS;  // scalar G_t, double-buffered (read by the next chunk)
  // Channel gates with VSPLIT: the cumulative G, written by the scan before the vote, double-buffered (the deferred
  // output of chunk c-1 reads it while chunk c's scan writes); the raw gates stay in place for the safe path.
  static constexpr bool GCB = CHAN && VSPLIT;
  static constexpr int GC = GS + 2 * C;
  // DP <= 64: a second, row-pair copy of the split q for the A-tile A operand (QP: one LDS.128 per hi / lo quad,
  // no register moves); at DP = 128 it does not fit (32 KB).
  static constexpr bool QPAIR = DP <= 64;
  static constexpr int QPS = 4 * DP + 4;  // QP row-pair stride (QPS / 4 odd)
  static constexpr int QP = GC + (GCB ? 2 * C * NCS : 0);
  static constexpr int TOTAL = QP + (QPAIR ? 16 * QPS : 0);
  static_assert(DP == 32 || DP == 64 || DP == 128, "DP");
  static_assert(NI % 2 == 0, "K^T Vt works on pairs of i tiles");
  static_assert(NKS % KH == 0, "A Vt: s steps per i slice");
  static_assert(NT <= 512, "NT");
  static_assert(RS % 32 == 8 && NCS % 32 == 8 && NOS % 32 == 4 && QS % 32 == 16 && AS % 32 == 16, "strides");
  static_assert(OB % 4 == 0 && (C * NOS) % 4 == 0, "float4 y phase");
  static_assert((C * (DP / 4)) % (NT / 2) == 0 && (16 * (DP / 4)) % (NT / 2) == 0, "split items");
  static_assert((MT * NKS) % NW == 0, "Vt split items");
  static_assert(TOTAL * 4 <= 232448, "shared memory");
  // Output of chunk c written at the start of chunk c+1 (one barrier fewer per chunk).  v10 could not do this for
  // scalar gates at DP = 128 (ptxas spilled); v16 can, and there it is what avoids a spill (12 bytes without it).
  static constexpr bool DEFER = true;
  // v16's opaque-tid trick at DP = 128 (recompute the per-thread offsets every chunk instead of keeping them live
  // across the chunk loop): kept with MW = 2, whose first build without it spilled 72 bytes at 255 registers.
  static constexpr bool OPAQUE = CHAN && DP == 128;
  static constexpr bool OPQT = DP == 128;
  static_assert(NC % (NW * 8) == 0 || NW * 8 >= NC, "channel scan columns");
  static_assert(BUF % 4 == 0 && RK % 4 == 0 && BUF0 % 4 == 0 && GOFF % 4 == 0 && QI % 4 == 0 && KT % 4 == 0 &&
                VS % 4 == 0 && AMS % 4 == 0 && GC % 4 == 0 && QP % 4 == 0 && (QPS / 4) % 2 == 1, "align");
};

__device__ __forceinline__ uint4 lds128(const float* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ uint2 lds64(const float* p) { return *reinterpret_cast<const uint2*>(p); }
__device__ __forceinline__ void sts128(float* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  *reinterpret_cast<uint4*>(p) = make_uint4(a, b, c, d);
}
// KT slot swizzle of column i (only i & 7 matters).
__device__ __forceinline__ int ktsw(int i) { return (2 * ((i >> 1) & 3)) ^ (4 * (i & 1)); }

template <int DP, bool CHAN>
__device__ __forceinline__ void load_chunk(float* qs, float* ks, float* buf, const float* __restrict__ q,
                                           const float* __restrict__ k, const float* __restrict__ v,
                                           const float* __restrict__ gate, const float* __restrict__ beta, int b,
                                           int h, int T, int H, int D, int t0, int n, int tid, bool vec, bool full) {
  using Cf = Cfg<DP, CHAN>;
  constexpr int NT = Cf::NT, RS = Cf::RS, NCS = Cf::NCS;
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
        __pipeline_memcpy_async(qs + t * RS + e, qb + o, 16);
        __pipeline_memcpy_async(ks + t * RS + e, kb + o, 16);
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
      __pipeline_memcpy_async(qs + t * RS + e, q + o, 16);
      __pipeline_memcpy_async(ks + t * RS + e, k + o, 16);
      __pipeline_memcpy_async(vs + t * NCS + e, v + o, 16);
      if constexpr (CHAN) __pipeline_memcpy_async(gs + t * NCS + e, gate + o, 16);
    }
  } else {
    const int tot = n * D;
    for (int idx = tid; idx < tot; idx += NT) {
      const int t = idx / D;
      const int e = idx - t * D;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + t * RS + e, q + o, 4);
      __pipeline_memcpy_async(ks + t * RS + e, k + o, 4);
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
template <int DP, bool CHAN>
__device__ __forceinline__ void store_y(float* __restrict__ y, const float* ob, const float* gsm, const float* gsc,
                                        int b, int h, int T, int H, int D, int t0, int n, int safe, int tid,
                                        bool fast) {
  using Cf = Cfg<DP, CHAN>;
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

template <int DP, bool CHAN>
__global__ void __launch_bounds__(Cfg<DP, CHAN>::NT, 1)
gd_tc_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
             const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H,
             int D, bool vec, bool fast) {
  using Cf = Cfg<DP, CHAN>;
  constexpr int C = Cf::C, NC = Cf::NC, MT = Cf::MT, NW = Cf::NW, NT = Cf::NT, IH = Cf::IH, NI = Cf::NI;
  constexpr int KH = Cf::KH, MW = Cf::MW, MTW = Cf::MTW, SCN = Cf::SCN;
  constexpr int NTT = Cf::NTT, NKS = Cf::NKS, RS = Cf::RS, NCS = Cf::NCS, NOS = Cf::NOS;
  constexpr int QS = Cf::QS, KTS = Cf::KTS, AS = Cf::AS;
  constexpr bool VSPLIT = Cf::VSPLIT;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid0 = threadIdx.x;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;

  for (int i = tid0; i < Cf::TOTAL; i += NT) sm[i] = 0.f;
  __syncthreads();

  float* rq = sm + Cf::RQ;
  float* rk = sm + Cf::RK;
  float* qi = sm + Cf::QI;
  float* kt = sm + Cf::KT;
  float* vsp = sm + Cf::VS;
  float* ams = sm + Cf::AMS;
  float* ob = sm + Cf::OB;
  float* gsc = sm + Cf::GS;

  const int nchunks = (T + C - 1) / C;
  load_chunk<DP, CHAN>(rq, rk, sm + Cf::BUF0, q, k, v, gate, beta, b, h, T, H, D, 0, min(C, T), tid0, vec,
                       fast && T >= C);
  __pipeline_commit();

  // S^T tile (m, kk): (j0[m], i), (j0[m], i+1), (j0[m]+8, i), (j0[m]+8, i+1), i = ibase + 8 kk + 2 tig
  float S[MW][NI][4];
#pragma unroll
  for (int m = 0; m < MW; ++m)
#pragma unroll
    for (int kk = 0; kk < NI; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) S[m][kk][e] = 0.f;

  constexpr bool DEFER = Cf::DEFER;
  int psafe = 0;  // DEFER: safe flag of the previous chunk, whose output is written at the start of this one
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    float* cur = sm + Cf::BUF0 + (ch & 1) * Cf::BUF;
    // Per-thread indices.  DP = 128 (at the 128-register cap): derived every chunk from an opaque copy of the
    // thread index, so ptxas recomputes the per-lane shared-memory offsets (a few integer ops per chunk) instead of
    // keeping them live across the chunk loop (which made it spill).
    int tid = tid0;
    if constexpr (Cf::OPQT) asm volatile("" : "+r"(tid));
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int gid = lane >> 2;
    const int tig = lane & 3;
    const int mw = warp % MTW;  // warp row: m-tiles MW mw .. MW mw + MW - 1
    const int kh = warp / MTW;
    const int j0 = 16 * MW * mw + gid;  // m-tile m: rows j0 + 16 m, j0 + 16 m + 8
    const int ibase = kh * IH;
    float* obw = ob + kh * C * NOS;
    __pipeline_wait_prior(0);
    __syncthreads();  // this chunk's inputs landed; the previous chunk's ob partials (and G) complete
    if constexpr (DEFER) {
      if (ch > 0)
        store_y<DP, CHAN>(y, ob,
                          Cf::GCB ? sm + Cf::GC + ((ch - 1) & 1) * C * NCS
                                  : sm + Cf::BUF0 + ((ch - 1) & 1) * Cf::BUF + Cf::GOFF,
                          gsc + ((ch - 1) & 1) * C, b, h, T, H, D, t0 - C, C, psafe, tid, fast);
    }

    float* vsm = cur + Cf::VOFF;
    float* gsm = cur + Cf::GOFF;
    const float* bsm = cur + Cf::BOFF;

    // ---- split q and k once per chunk (raw rq / rk -> QI / KT).  Threads [NT/2, NT): q items (row t, float4
    // column f): two STS.128 of feature pairs.  Threads [0, NT/2): k items (rows s, s+4 of slot g, float4
    // column f): four STS.128 (one KT slot per column); lane -> (g, f) chosen so that the raw reads and the
    // swizzled slot writes are bank-conflict free.  Every row 0..C-1 and column 0..DP-1 is split (stale rows
    // beyond n and zero pad columns are finite, so their parts are finite and, as in v8, only ever meet zero
    // weights or masked outputs).
    {
      constexpr int P4 = DP / 4;
      constexpr int NH = NT / 2;
      if (tid < NH) {
        constexpr int NKI = (16 * P4) / NH;
#pragma unroll
        for (int it = 0; it < NKI; ++it) {
          const int m = tid + it * NH;
          const int g = (m & 3) + 4 * ((m >> 3) & 3);
          const int f = 2 * (m >> 5) + ((m >> 2) & 1);
          const int s = 8 * (g >> 2) + (g & 3);
          const float4 x = *reinterpret_cast<const float4*>(rk + s * RS + 4 * f);
          const float4 x4 = *reinterpret_cast<const float4*>(rk + (s + 4) * RS + 4 * f);
          const int gx = g ^ (4 * (f & 1));
          float* kc = kt + 4 * f * KTS;
          uint32_t h0, l0, h1, l1;
          split(x.x, h0, l0);
          split(x4.x, h1, l1);
          sts128(kc + 0 * KTS + 4 * (gx ^ 0), h0, h1, l0, l1);
          split(x.y, h0, l0);
          split(x4.y, h1, l1);
          sts128(kc + 1 * KTS + 4 * (gx ^ 4), h0, h1, l0, l1);
          split(x.z, h0, l0);
          split(x4.z, h1, l1);
          sts128(kc + 2 * KTS + 4 * (gx ^ 2), h0, h1, l0, l1);
          split(x.w, h0, l0);
          split(x4.w, h1, l1);
          sts128(kc + 3 * KTS + 4 * (gx ^ 6), h0, h1, l0, l1);
        }
      } else if constexpr (Cf::QPAIR) {
        // q items: rows t, t+8 of pair tp, float4 column f (the k item mapping): QI and QP.
        constexpr int NQI = (16 * P4) / NH;
        float* qp = sm + Cf::QP;
#pragma unroll
        for (int it = 0; it < NQI; ++it) {
          const int m = tid - NH + it * NH;
          const int tp = (m & 3) + 4 * ((m >> 3) & 3);
          const int f = 2 * (m >> 5) + ((m >> 2) & 1);
          const int t = (tp & 7) + 16 * (tp >> 3);
          const float4 x = *reinterpret_cast<const float4*>(rq + t * RS + 4 * f);
          const float4 x8 = *reinterpret_cast<const float4*>(rq + (t + 8) * RS + 4 * f);
          uint32_t a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3;
          split(x.x, a0, b0);
          split(x.y, a1, b1);
          split(x.z, a2, b2);
          split(x.w, a3, b3);
          split(x8.x, c0, d0);
          split(x8.y, c1, d1);
          split(x8.z, c2, d2);
          split(x8.w, c3, d3);
          float* qd = qi + t * QS + 8 * f;
          sts128(qd, a0, a1, b0, b1);
          sts128(qd + 4, a2, a3, b2, b3);
          sts128(qd + 8 * QS, c0, c1, d0, d1);
          sts128(qd + 8 * QS + 4, c2, c3, d2, d3);
          float* pd = qp + tp * Cf::QPS + 16 * f;
          sts128(pd, a0, c0, a1, c1);
          sts128(pd + 4, b0, d0, b1, d1);
          sts128(pd + 8, a2, c2, a3, c3);
          sts128(pd + 12, b2, d2, b3, d3);
        }
      } else {
        constexpr int NQI = (C * P4) / NH;
#pragma unroll
        for (int it = 0; it < NQI; ++it) {
          const int m = tid - NH + it * NH;
          const int t = m / P4;
          const int f = m % P4;
          const float4 x = *reinterpret_cast<const float4*>(rq + t * RS + 4 * f);
          uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
          split(x.x, h0, l0);
          split(x.y, h1, l1);
          split(x.z, h2, l2);
          split(x.w, h3, l3);
          float* qd = qi + t * QS + 8 * f;
          sts128(qd, h0, h1, l0, l1);
          sts128(qd + 4, h2, h3, l2, l3);
        }
      }
    }

    // ---- gate scan (reads gate/beta only, so it runs before the barrier that publishes the split)
    int pred = 0;
    float GC0[MW], GC1[MW], cf = 0.f;
#pragma unroll
    for (int m = 0; m < MW; ++m) GC0[m] = GC1[m] = 1.f;
    float gv[SCN][8];
    float excl[SCN];
    const int sj0 = tid >> 2;  // channel: column of this thread in the scan, set cs: sj0 + cs NT / 4 (idle >= NC)
    const int sseg = tid & 3;  // channel: segment of 8 steps
    if constexpr (CHAN) {
#pragma unroll
      for (int cs = 0; cs < SCN; ++cs) {
        const int sj = sj0 + cs * (NT / 4);
        float p = 1.f;
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int t = sseg * 8 + u;
          const float g = (t < n && sj < D) ? gsm[t * NCS + sj] : 1.f;
          p *= g;
          gv[cs][u] = p;
        }
        float incl = p;
        float o = __shfl_up_sync(kFull, incl, 1, 4);
        if (sseg >= 1) incl *= o;
        o = __shfl_up_sync(kFull, incl, 2, 4);
        if (sseg >= 2) incl *= o;
        excl[cs] = __shfl_up_sync(kFull, incl, 1, 4);
        if (sseg == 0) excl[cs] = 1.f;
        const float tot = __shfl_sync(kFull, incl, 3, 4);
        pred |= !(tot >= kSafe);
        if constexpr (Cf::GCB) {
          if (sj < NC) {
            float* gcw = sm + Cf::GC + (ch & 1) * C * NCS + sj;
#pragma unroll
            for (int u = 0; u < 8; ++u) {
              const int t = sseg * 8 + u;
              if (t < n) gcw[t * NCS] = excl[cs] * gv[cs][u];
            }
          }
        }
      }
    } else {
      float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const float o = __shfl_up_sync(kFull, G, off);
        if (lane >= off) G *= o;
      }
      const float gcs = __shfl_sync(kFull, G, 31);
#pragma unroll
      for (int m = 0; m < MW; ++m) GC0[m] = GC1[m] = gcs;
      pred = !(gcs >= kSafe);
      if (!pred) cf = (lane < n) ? bsm[lane] / G : 0.f;
      if (warp == 0) gsc[(DEFER ? (ch & 1) * C : 0) + lane] = G;
    }
    const int safe = __syncthreads_or(pred);
    // Every thread is past the split (raw q / k free) and past the previous chunk's output (which read its G in
    // the buffer loaded here): prefetch the next chunk.
    if (ch + 1 < nchunks)
      load_chunk<DP, CHAN>(rq, rk, sm + Cf::BUF0 + ((ch + 1) & 1) * Cf::BUF, q, k, v, gate, beta, b, h, T, H, D,
                           t0 + C, min(C, T - t0 - C), tid, vec, fast && T - t0 - C >= C);
    __pipeline_commit();

    if (!safe) {
      if constexpr (!VSPLIT) {
        // (channel gates, DP = 128) v10's in place G / (v / G), 0 beyond the chunk end; split by each reader.
#pragma unroll
        for (int cs = 0; cs < SCN; ++cs) {
          const int sj = sj0 + cs * (NT / 4);
          if (sj < NC) {
#pragma unroll
            for (int u = 0; u < 8; ++u) {
              const int t = sseg * 8 + u;
              if (t < n) {
                const float G = excl[cs] * gv[cs][u];
                gsm[t * NCS + sj] = G;
                vsm[t * NCS + sj] = vsm[t * NCS + sj] / G;
              } else {
                vsm[t * NCS + sj] = 0.f;
              }
            }
          }
        }
      } else {
        // Vt^T fragments split into VS, every warp its own lanes of (mt, ks) fragments: scalar gates
        // Vt = v * (beta / G) (the scan's cf, by shuffle), channel gates Vt = v / G (G from GC), 0 beyond n.
        const float* gcr = sm + Cf::GC + (ch & 1) * C * NCS;
#pragma unroll
        for (int it = 0; it < (MT * NKS) / NW; ++it) {
          const int fi = warp + it * NW;
          const int mtv = fi / NKS;
          const int ksv = fi % NKS;
          const int s0 = 8 * ksv + tig;
          const int jv = 16 * mtv + gid;
          float x0 = vsm[s0 * NCS + jv];
          float x1 = vsm[s0 * NCS + jv + 8];
          float x2 = vsm[(s0 + 4) * NCS + jv];
          float x3 = vsm[(s0 + 4) * NCS + jv + 8];
          if constexpr (CHAN) {
            x0 = (s0 < n) ? x0 / gcr[s0 * NCS + jv] : 0.f;
            x1 = (s0 < n) ? x1 / gcr[s0 * NCS + jv + 8] : 0.f;
            x2 = (s0 + 4 < n) ? x2 / gcr[(s0 + 4) * NCS + jv] : 0.f;
            x3 = (s0 + 4 < n) ? x3 / gcr[(s0 + 4) * NCS + jv + 8] : 0.f;
          } else {
            const float ca = __shfl_sync(kFull, cf, s0);
            const float cb = __shfl_sync(kFull, cf, s0 + 4);
            x0 *= ca;
            x1 *= ca;
            x2 *= cb;
            x3 *= cb;
          }
          uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
          split(x0, h0, l0);
          split(x1, h1, l1);
          split(x2, h2, l2);
          split(x3, h3, l3);
          float* vd = vsp + ((mtv * NKS + ksv) * 2) * 128 + 4 * lane;  // hi quad, then lo quad, in A-operand order
          sts128(vd, h0, h1, h2, h3);
          sts128(vd + 128, l0, l1, l2, l3);
        }
      }
      // ---- A = causal(Q K^T), split and stored pre-interleaved for the A Vt B fragments.  6 tiles (mtA, ns),
      // ns <= 2 mtA + 1, each over the whole feature range, on the last warps.  Column n of a tile is key
      // s = 8 ns + (n >> 1) + 4 (n & 1), so a lane's accumulator holds s = 8 ns + tig and s + 4 (one STS.128
      // per row).  Accumulators per (feature half, parity) as v10's two half-tiles: the same sums, the same order.
      for (int item = NW - 1 - warp; item < 6; item += NW) {
        const int mtA = item < 2 ? 0 : 1;
        const int ns = item < 2 ? item : item - 2;
        const float* qa = qi + (16 * mtA + gid) * QS + 4 * tig;
        const float* qpa = sm + Cf::QP + (gid + 8 * mtA) * Cf::QPS + 8 * tig;  // pair (16 mtA + gid, + 8), fp = 4 kk + tig
        const int g = 4 * ns + (gid >> 1);
        const float* k0 = kt + (2 * tig) * KTS + 4 * (g ^ (2 * tig)) + (gid & 1);
        const float* k1 = kt + (2 * tig + 1) * KTS + 4 * (g ^ (2 * tig) ^ 4) + (gid & 1);
        float acc[4];
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
          float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
          for (int k2 = 0; k2 < DP / 16; ++k2) {
            const int kk = hh * (DP / 16) + k2;
            const uint32_t bh0 = __float_as_uint(k0[8 * kk * KTS]);
            const uint32_t bh1 = __float_as_uint(k1[8 * kk * KTS]);
            const uint32_t bl0 = __float_as_uint(k0[8 * kk * KTS + 2]);
            const uint32_t bl1 = __float_as_uint(k1[8 * kk * KTS + 2]);
            uint32_t ah[4], al[4];
            if constexpr (Cf::QPAIR) {
              const uint4 H = lds128(qpa + 32 * kk);
              const uint4 L = lds128(qpa + 32 * kk + 4);
              ah[0] = H.x; ah[1] = H.y; ah[2] = H.z; ah[3] = H.w;
              al[0] = L.x; al[1] = L.y; al[2] = L.z; al[3] = L.w;
            } else {
              const uint4 A0 = lds128(qa + 16 * kk);
              const uint4 A1 = lds128(qa + 8 * QS + 16 * kk);
              ah[0] = A0.x; ah[1] = A1.x; ah[2] = A0.y; ah[3] = A1.y;
              al[0] = A0.z; al[1] = A1.z; al[2] = A0.w; al[3] = A1.w;
            }
            mma8(aL[k2 & 1], al, bh0, bh1);
            mma8(aL[k2 & 1], ah, bl0, bl1);
            mma8(aH[k2 & 1], ah, bh0, bh1);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float a = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
            acc[e] = hh ? acc[e] + a : a;
          }
        }
        const int t = 16 * mtA + gid;
        const int s = 8 * ns + tig;
        uint32_t h0, l0, h1, l1;
        split((s <= t) ? acc[0] : 0.f, h0, l0);
        split((s + 4 <= t) ? acc[1] : 0.f, h1, l1);
        sts128(ams + t * AS + 16 * ns + 4 * tig, h0, h1, l0, l1);
        split((s <= t + 8) ? acc[2] : 0.f, h0, l0);
        split((s + 4 <= t + 8) ? acc[3] : 0.f, h1, l1);
        sts128(ams + (t + 8) * AS + 16 * ns + 4 * tig, h0, h1, l0, l1);
      }
      __syncthreads();  // A tiles, Vt (and channel G) visible
      if constexpr (CHAN) {
        const float* gcr = Cf::GCB ? sm + Cf::GC + (ch & 1) * C * NCS : gsm;
#pragma unroll
        for (int m = 0; m < MW; ++m) {
          GC0[m] = gcr[(n - 1) * NCS + j0 + 16 * m];
          GC1[m] = gcr[(n - 1) * NCS + j0 + 16 * m + 8];
        }
      }
      // O^T partial = S^T Q^T (this warp's i slice) + Vt^T A^T (this warp's share of the s steps), for each of
      // the MW m-tiles: every B fragment is loaded once and feeds MW MMA triples (per m-tile the same chains,
      // operands and order as v16).
      float O[MW][NTT][4];
#pragma unroll
      for (int m = 0; m < MW; ++m)
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) O[m][nt][e] = 0.f;
      const float* qrow = qi + gid * QS + 2 * ibase + 4 * tig;
#pragma unroll
      for (int kk = 0; kk < NI; ++kk) {
        uint32_t ah[MW][4], al[MW][4];
#pragma unroll
        for (int m = 0; m < MW; ++m) {
          split(S[m][kk][0], ah[m][0], al[m][0]);
          split(S[m][kk][2], ah[m][1], al[m][1]);
          split(S[m][kk][1], ah[m][2], al[m][2]);
          split(S[m][kk][3], ah[m][3], al[m][3]);
        }
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          const uint4 qv = lds128(qrow + 8 * nt * QS + 16 * kk);  // {hi(i), hi(i+1), lo(i), lo(i+1)}, row 8 nt + gid
#pragma unroll
          for (int m = 0; m < MW; ++m) mma3(O[m][nt], ah[m], al[m], qv.x, qv.y, qv.z, qv.w);
        }
      }
      // Vt^T fragments (A operand, rows j, k = s) for every s step and each of the warp's m-tiles, split; loaded after
      // Q S0 so that they are not live during it (register pressure at MW = 2).
      uint32_t vh[MW][NKS][4], vl[MW][NKS][4];
#pragma unroll
      for (int m = 0; m < MW; ++m) {
        if constexpr (VSPLIT) {
          // VS holds the hi and lo quads in A-operand order (one LDS.128 each, no register moves)
          const float* vr = vsp + ((MW * mw + m) * NKS * 2) * 128 + 4 * lane;
#pragma unroll
          for (int ks = 0; ks < NKS; ++ks) {
            const uint4 r0 = lds128(vr + ks * 256);
            const uint4 r1 = lds128(vr + ks * 256 + 128);
            vh[m][ks][0] = r0.x;
            vh[m][ks][1] = r0.y;
            vh[m][ks][2] = r0.z;
            vh[m][ks][3] = r0.w;
            vl[m][ks][0] = r1.x;
            vl[m][ks][1] = r1.y;
            vl[m][ks][2] = r1.z;
            vl[m][ks][3] = r1.w;
          }
        } else {
          const int jm = j0 + 16 * m;
#pragma unroll
          for (int ks = 0; ks < NKS; ++ks) {
            const int s0 = 8 * ks + tig;
            split(vsm[s0 * NCS + jm], vh[m][ks][0], vl[m][ks][0]);
            split(vsm[s0 * NCS + jm + 8], vh[m][ks][1], vl[m][ks][1]);
            split(vsm[(s0 + 4) * NCS + jm], vh[m][ks][2], vl[m][ks][2]);
            split(vsm[(s0 + 4) * NCS + jm + 8], vh[m][ks][3], vl[m][ks][3]);
          }
        }
      }
      const float* arow = ams + gid * AS + 4 * tig;
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        if (ks / (NKS / KH) != kh) continue;
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          if (nt < ks) continue;
          const uint4 av = lds128(arow + 8 * nt * AS + 16 * ks);  // {hi(s), hi(s+4), lo(s), lo(s+4)}, row 8 nt + gid
#pragma unroll
          for (int m = 0; m < MW; ++m) mma3(O[m][nt], vh[m][ks], vl[m][ks], av.x, av.y, av.z, av.w);
        }
      }
#pragma unroll
      for (int m = 0; m < MW; ++m) {
        const int jm = j0 + 16 * m;
#pragma unroll
        for (int nt = 0; nt < NTT; ++nt) {
          const int t = 8 * nt + 2 * tig;
          obw[t * NOS + jm] = O[m][nt][0];
          obw[(t + 1) * NOS + jm] = O[m][nt][1];
          obw[t * NOS + jm + 8] = O[m][nt][2];
          obw[(t + 1) * NOS + jm + 8] = O[m][nt][3];
        }
      }
      // S^T = G_C (S^T + Vt^T K): two i tiles at a time, even and odd s steps in separate fresh
      // accumulators (4 independent MMA chains of 3 NKS / 2 per m-tile).
      // K fragment of (s = 8 ks + tig, column i = ibase + 8 (kp + u) + gid): KT slot (4 ks + tig) ^ sw(gid)
      // = ((tig ^ sw(gid)) ^ 4 (ks & 1)) + 8 (ks >> 1): two per-lane bases, the rest compile-time.
      const int kx = tig ^ ktsw(gid);
      const float* kb0 = kt + (ibase + gid) * KTS + 4 * kx;
      const float* kb1 = kt + (ibase + gid) * KTS + 4 * (kx ^ 4);
#pragma unroll
      for (int kp = 0; kp < NI; kp += 2) {
        float acc[MW][2][2][4];
#pragma unroll
        for (int m = 0; m < MW; ++m)
#pragma unroll
          for (int u = 0; u < 2; ++u)
#pragma unroll
            for (int w = 0; w < 2; ++w)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[m][u][w][e] = 0.f;
#pragma unroll
        for (int ks = 0; ks < NKS; ++ks) {
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const uint4 kv = lds128(((ks & 1) ? kb1 : kb0) + 8 * (kp + u) * KTS + 32 * (ks >> 1));
#pragma unroll
            for (int m = 0; m < MW; ++m) mma3(acc[m][u][ks & 1], vh[m][ks], vl[m][ks], kv.x, kv.y, kv.z, kv.w);
          }
        }
#pragma unroll
        for (int m = 0; m < MW; ++m)
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int kk = kp + u;
            S[m][kk][0] = (S[m][kk][0] + (acc[m][u][0][0] + acc[m][u][1][0])) * GC0[m];
            S[m][kk][1] = (S[m][kk][1] + (acc[m][u][0][1] + acc[m][u][1][1])) * GC0[m];
            S[m][kk][2] = (S[m][kk][2] + (acc[m][u][0][2] + acc[m][u][1][2])) * GC1[m];
            S[m][kk][3] = (S[m][kk][3] + (acc[m][u][0][3] + acc[m][u][1][3])) * GC1[m];
          }
      }
    } else {
      __syncthreads();  // (kept from v10: the split was already published by the vote barrier)
      // Safe path (a cumulative gate product below 1e-18 in this chunk): plain fp32 recurrence on the
      // exact inputs x = hi + (lo - half ulp) (both parts exact, their sum is x); k and q shared by the m-tiles.
      const int swe = 2 * tig;  // ktsw(i) of the even column i = ibase + 8 kk + 2 tig (odd column: ^ 4)
      for (int t = 0; t < n; ++t) {
        float g0[MW], g1[MW], cv0[MW], cv1[MW];
#pragma unroll
        for (int m = 0; m < MW; ++m) {
          const int jm = j0 + 16 * m;
          if constexpr (CHAN) {
            g0[m] = gsm[t * NCS + jm];
            g1[m] = gsm[t * NCS + jm + 8];
            cv0[m] = vsm[t * NCS + jm];
            cv1[m] = vsm[t * NCS + jm + 8];
          } else {
            g0[m] = gsm[t];
            g1[m] = g0[m];
            const float bt = bsm[t];
            cv0[m] = bt * vsm[t * NCS + jm];
            cv1[m] = bt * vsm[t * NCS + jm + 8];
          }
        }
        const int gs = 4 * (t >> 3) + (t & 3);
        const int hf = (t >> 2) & 1;
        const float* kc0 = kt + (ibase + 2 * tig) * KTS + 4 * (gs ^ swe) + hf;
        const float* kc1 = kt + (ibase + 2 * tig + 1) * KTS + 4 * (gs ^ swe ^ 4) + hf;
        float p0[MW], p1[MW];
#pragma unroll
        for (int m = 0; m < MW; ++m) p0[m] = p1[m] = 0.f;
#pragma unroll
        for (int kk = 0; kk < NI; ++kk) {
          const int i = ibase + 8 * kk + 2 * tig;
          const uint4 q4 = lds128(qi + t * QS + 2 * i);
          const float kx = kc0[8 * kk * KTS] + __uint_as_float(__float_as_uint(kc0[8 * kk * KTS + 2]) - 0x1000u);
          const float ky = kc1[8 * kk * KTS] + __uint_as_float(__float_as_uint(kc1[8 * kk * KTS + 2]) - 0x1000u);
          const float qx = __uint_as_float(q4.x) + __uint_as_float(q4.z - 0x1000u);
          const float qy = __uint_as_float(q4.y) + __uint_as_float(q4.w - 0x1000u);
#pragma unroll
          for (int m = 0; m < MW; ++m) {
            S[m][kk][0] = fmaf(cv0[m], kx, S[m][kk][0] * g0[m]);
            S[m][kk][1] = fmaf(cv0[m], ky, S[m][kk][1] * g0[m]);
            S[m][kk][2] = fmaf(cv1[m], kx, S[m][kk][2] * g1[m]);
            S[m][kk][3] = fmaf(cv1[m], ky, S[m][kk][3] * g1[m]);
            p0[m] = fmaf(qx, S[m][kk][0], p0[m]);
            p0[m] = fmaf(qy, S[m][kk][1], p0[m]);
            p1[m] = fmaf(qx, S[m][kk][2], p1[m]);
            p1[m] = fmaf(qy, S[m][kk][3], p1[m]);
          }
        }
#pragma unroll
        for (int m = 0; m < MW; ++m) {
          p0[m] += __shfl_xor_sync(kFull, p0[m], 1);
          p0[m] += __shfl_xor_sync(kFull, p0[m], 2);
          p1[m] += __shfl_xor_sync(kFull, p1[m], 1);
          p1[m] += __shfl_xor_sync(kFull, p1[m], 2);
          if (tig == 0) {
            obw[t * NOS + j0 + 16 * m] = p0[m];
            obw[t * NOS + j0 + 16 * m + 8] = p1[m];
          }
        }
      }
    }
    if constexpr (DEFER) {
      psafe = safe;
    } else {
      __syncthreads();
      store_y<DP, CHAN>(y, ob, gsm, gsc, b, h, T, H, D, t0, n, safe, tid, fast);
    }
  }
  if constexpr (DEFER) {
    __syncthreads();
    const int lt0 = (nchunks - 1) * C;
    store_y<DP, CHAN>(y, ob,
                      Cf::GCB ? sm + Cf::GC + ((nchunks - 1) & 1) * C * NCS
                              : sm + Cf::BUF0 + ((nchunks - 1) & 1) * Cf::BUF + Cf::GOFF,
                      gsc + ((nchunks - 1) & 1) * C, b, h, T, H, D, lt0, T - lt0, psafe, tid0, fast);
  }
}

template <int DP, bool CHAN>
void launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
            const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H, int D) {
  using Cf = Cfg<DP, CHAN>;
  const size_t smem = sizeof(float) * (size_t)Cf::TOTAL;
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CHAN) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  const bool vec = (D % 4 == 0) && (al % 16 == 0);
  const bool fast = vec && D == DP && (reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0) &&
                    (long long)Cf::C * H * D < (1LL << 31);
  auto kern = gd_tc_kernel<DP, CHAN>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H, Cf::NT, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D, vec, fast);
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
void cgd_v17_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor y) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda() && gate.is_cuda() && y.is_cuda(), "CUDA tensors");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
              v.scalar_type() == torch::kFloat32 && gate.scalar_type() == torch::kFloat32 &&
              y.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
              y.is_contiguous(), "contiguous tensors");
  TORCH_CHECK(q.dim() == 4, "q is (B,T,H,D)");
  const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
  TORCH_CHECK(D >= 1 && D <= 128, "head size must be in [1, 128]");
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes() && gate.sizes() == q.sizes() && y.sizes() == q.sizes(),
              "shapes");
  if (B == 0 || T == 0 || H == 0) return;
  // Short sequences: v7's parallel form (one launch of short parallel work).
  // Seed-sized problems: v12's one-barrier parallel form; other short sequences: v7's.
  if (seed_dispatch<true>(q, k, v, gate, nullptr, y, B, T, H, D)) return;
  if (par_dispatch<true>(q, k, v, gate, nullptr, y, B, T, H, D)) return;
  // No beta in this problem: the gate pointer is passed in its slot and never read there.
  if (D <= 32) {
    launch<32, true>(q, k, v, gate, gate, y, B, T, H, D);
  } else if (D <= 64) {
    launch<64, true>(q, k, v, gate, gate, y, B, T, H, D);
  } else {
    launch<128, true>(q, k, v, gate, gate, y, B, T, H, D);
  }
}
"""

CPP_SRC = "void cgd_v17_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor y);"

_ext = load_inline(
    name="cgd_v17_pair_tiles",
    cpp_sources=[CPP_SRC],
    cuda_sources=[CUDA_SRC + DISPATCH_SRC],
    functions=["cgd_v17_forward"],
    extra_cuda_cflags=["-O3", "-lineinfo", "--ptxas-options=-v"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate):
        q = q.contiguous()
        y = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        _ext.cgd_v17_forward(q, k.contiguous(), v.contiguous(), gate.contiguous(), y)
        return y
