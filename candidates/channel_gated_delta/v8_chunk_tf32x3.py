# v8 (channel gates): chunkwise form on tensor cores with split precision (3xTF32: a = hi + lo, a*b ~ hi*hi + hi*lo + lo*hi,
# fp32 accumulators), mma.sync.m16n8k8 via inline PTX. One CTA per (b, h), the whole head (NC = DP columns).
# Status: compile-checked for sm_90 only, NOT yet run on a GPU; see NOTES.md (v8 section).
#
# Per chunk of C = 32 steps, with G_t[j] the product of the gates of column j from the chunk start to t
# (scalar problem: the same for every j) and Vt[s][j] = beta_s v_s[j] / G_s[j]:
#   y_t[j]   = G_t[j] * ( (Q S0)[t][j] + sum_{s<=t} (q_t . k_s) Vt[s][j] )
#   S_C[:,j] = G_C[j] * ( S0 + K^T Vt )[:, j]
# The state is kept transposed (S^T, rows j, cols i) in mma accumulator registers across chunks: the
# accumulator layout of a 16x8 tile is the A-operand layout of m16n8k8 up to a permutation of k inside each
# group of 8, so O^T = S^T Q^T reads S^T straight from registers (B = Q^T read with the same permutation).
# Warp (mt, kh) owns S^T rows j in [16 mt, 16 mt + 16) and cols i in the kh-th half of the head.
# Phases per chunk: cp.async prefetch of the next chunk; A = causal(Q K^T) (6 tiles x 2 k-halves over warps,
# two slices summed at read); gate scan (warp shuffle scan for scalar gates; 4 threads per column for channel
# gates); then either the fast path (3xTF32 mma: O^T = S^T Q^T + Vt^T A^T, S^T = G_C (S^T + Vt^T K)) or, if
# any G_C[j] < 1e-18 (tiny gates: 1/G would grow too large), the safe path: the plain fp32 recurrence step by
# step on the same registers for that chunk (no scaling at all, so underflow gives correct tiny answers).
# No logs of gates, no division by a product below 1e-18.
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

__device__ __forceinline__ uint32_t round_tc(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = hi + lo (+ a remainder of ~2^-22 |x|), hi and lo representable by the tensor-core input format.
__device__ __forceinline__ void split(float x, uint32_t& hi, uint32_t& lo) {
  hi = round_tc(x);
  lo = round_tc(x - __uint_as_float(hi));
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

template <int DP, bool CHAN>
struct Cfg {
  static constexpr int C = 32;            // chunk length (== warp size: the scalar gate scan is one warp)
  static constexpr int NC = DP;           // columns per CTA: the whole head
  static constexpr int MT = NC / 16;      // m-tiles of S^T rows
  static constexpr int KH = 2;            // halves of the i range
  static constexpr int NW = MT * KH;
  static constexpr int NT = NW * 32;      // == 4 * NC
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
  static constexpr int OB = AM + 2 * C * CS;    // 2 slices (kh) of C x NOS
  static constexpr int GS = OB + 2 * C * NOS;   // scalar G_t
  static constexpr int TOTAL = GS + C;
  static_assert(DP == 32 || DP == 64 || DP == 128, "DP");
  static_assert(NT == 4 * NC, "NT");
  static_assert(DPS % 32 == 8 && NCS % 32 == 8 && NOS % 32 == 4 && CS % 32 == 4, "strides");
  static_assert(BUF % 4 == 0 && KOFF % 4 == 0 && VOFF % 4 == 0 && GOFF % 4 == 0, "align");
};

template <int DP, bool CHAN>
__device__ __forceinline__ void load_chunk(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                           const float* __restrict__ v, const float* __restrict__ gate,
                                           const float* __restrict__ beta, int b, int h, int T, int H, int D,
                                           int t0, int n, int tid, bool vec) {
  using Cf = Cfg<DP, CHAN>;
  constexpr int NT = Cf::NT, DPS = Cf::DPS, NCS = Cf::NCS;
  float* qs = buf;
  float* ks = buf + Cf::KOFF;
  float* vs = buf + Cf::VOFF;
  float* gs = buf + Cf::GOFF;
  const long long rs = (long long)H * D;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * D;
  if (vec) {
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

template <int DP, bool CHAN>
__global__ void __launch_bounds__(Cfg<DP, CHAN>::NT, 1)
gd_tc_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
             const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y, int T, int H,
             int D, bool vec) {
  using Cf = Cfg<DP, CHAN>;
  constexpr int C = Cf::C, NC = Cf::NC, MT = Cf::MT, NW = Cf::NW, NT = Cf::NT, IH = Cf::IH, NI = Cf::NI;
  constexpr int NTT = Cf::NTT, NKS = Cf::NKS, DPS = Cf::DPS, NCS = Cf::NCS, CS = Cf::CS, NOS = Cf::NOS;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2;
  const int tig = lane & 3;
  const int h = blockIdx.x % H;
  const int b = blockIdx.x / H;

  for (int i = tid; i < Cf::TOTAL; i += NT) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  load_chunk<DP, CHAN>(sm, q, k, v, gate, beta, b, h, T, H, D, 0, min(C, T), tid, vec);
  __pipeline_commit();

  const int mt = warp % MT;
  const int kh = warp / MT;
  const int j0 = 16 * mt + gid;
  const int ibase = kh * IH;
  float* am = sm + Cf::AM;
  float* ob = sm + Cf::OB;
  float* gsc = sm + Cf::GS;
  float* obw = ob + kh * C * NOS;

  float S[NI][4];  // S^T tile kk: (j0, i), (j0, i+1), (j0+8, i), (j0+8, i+1), i = ibase + 8 kk + 2 tig
#pragma unroll
  for (int kk = 0; kk < NI; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;

  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    float* cur = sm + (ch & 1) * Cf::BUF;
    __pipeline_wait_prior(0);
    __syncthreads();
    if (ch + 1 < nchunks)
      load_chunk<DP, CHAN>(sm + ((ch + 1) & 1) * Cf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C,
                           min(C, T - t0 - C), tid, vec);
    __pipeline_commit();

    const float* qs = cur;
    const float* ksm = cur + Cf::KOFF;
    float* vsm = cur + Cf::VOFF;
    float* gsm = cur + Cf::GOFF;
    const float* bsm = cur + Cf::BOFF;

    // ---- A = causal(Q K^T): tiles (mtA, ns) with ns <= 2 mtA + 1 (6 tiles), each in two k halves.
    for (int item = warp; item < 12; item += NW) {
      const int tau = item >> 1;
      const int half = item & 1;
      const int mtA = tau < 2 ? 0 : 1;
      const int ns = tau < 2 ? tau : tau - 2;
      // Four independent accumulator chains (hi*hi and the small terms, even and odd k steps): this phase
      // is latency-bound (one item per warp), not throughput-bound.
      float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
      float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        const int i = half * (DP / 2) + 8 * kk + 2 * tig;
        const float2 qa = *reinterpret_cast<const float2*>(qs + (16 * mtA + gid) * DPS + i);
        const float2 qb = *reinterpret_cast<const float2*>(qs + (16 * mtA + gid + 8) * DPS + i);
        const float2 kb = *reinterpret_cast<const float2*>(ksm + (8 * ns + gid) * DPS + i);
        uint32_t ah[4], al[4], bh0, bl0, bh1, bl1;
        split(qa.x, ah[0], al[0]);
        split(qb.x, ah[1], al[1]);
        split(qa.y, ah[2], al[2]);
        split(qb.y, ah[3], al[3]);
        split(kb.x, bh0, bl0);
        split(kb.y, bh1, bl1);
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

    // ---- gate scan
    int pred = 0;
    float GC0 = 1.f, GC1 = 1.f, cf = 0.f;
    float gv[8];
    float excl = 1.f;
    const int sj = tid >> 2;   // channel: column of this thread in the scan
    const int sseg = tid & 3;  // channel: segment of 8 steps
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
      if (warp == 0) gsc[lane] = G;
    }
    const int safe = __syncthreads_or(pred);

    if (!safe) {
      if constexpr (CHAN) {
        // In place: gate -> G (cumulative), v -> v / G (0 beyond the chunk end).
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
        __syncthreads();
        GC0 = gsm[(n - 1) * NCS + j0];
        GC1 = gsm[(n - 1) * NCS + j0 + 8];
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
      // O^T partial = S^T Q^T (this warp's i half) + Vt^T A^T (this warp's half of the s steps).
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
          const float2 qv = *reinterpret_cast<const float2*>(qs + (8 * nt + gid) * DPS + i);
          uint32_t bh0, bl0, bh1, bl1;
          split(qv.x, bh0, bl0);
          split(qv.y, bh1, bl1);
          mma3(O[nt], ah, al, bh0, bh1, bl0, bl1);
        }
      }
#pragma unroll
      for (int ks = 0; ks < NKS; ++ks) {
        if (ks / (NKS / 2) != kh) continue;
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
      // S^T = G_C (S^T + Vt^T K)
#pragma unroll
      for (int kk = 0; kk < NI; ++kk) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        const int i = ibase + 8 * kk + gid;
#pragma unroll
        for (int ks = 0; ks < NKS; ++ks) {
          const float b0 = ksm[(8 * ks + tig) * DPS + i];
          const float b1 = ksm[(8 * ks + tig + 4) * DPS + i];
          uint32_t bh0, bl0, bh1, bl1;
          split(b0, bh0, bl0);
          split(b1, bh1, bl1);
          mma3(acc, vh[ks], vl[ks], bh0, bh1, bl0, bl1);
        }
        S[kk][0] = (S[kk][0] + acc[0]) * GC0;
        S[kk][1] = (S[kk][1] + acc[1]) * GC0;
        S[kk][2] = (S[kk][2] + acc[2]) * GC1;
        S[kk][3] = (S[kk][3] + acc[3]) * GC1;
      }
    } else {
      // Safe path (a cumulative gate product below 1e-18 in this chunk): plain fp32 recurrence.
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
          const float2 kv = *reinterpret_cast<const float2*>(ksm + t * DPS + i);
          const float2 qv = *reinterpret_cast<const float2*>(qs + t * DPS + i);
          S[kk][0] = fmaf(cv0, kv.x, S[kk][0] * g0);
          S[kk][1] = fmaf(cv0, kv.y, S[kk][1] * g0);
          S[kk][2] = fmaf(cv1, kv.x, S[kk][2] * g1);
          S[kk][3] = fmaf(cv1, kv.y, S[kk][3] * g1);
          p0 = fmaf(qv.x, S[kk][0], p0);
          p0 = fmaf(qv.y, S[kk][1], p0);
          p1 = fmaf(qv.x, S[kk][2], p1);
          p1 = fmaf(qv.y, S[kk][3], p1);
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
    __syncthreads();

    // ---- y = (sum of the two i-half partials) * G_t (1 on the safe path)
    const long long rs = (long long)H * D;
    for (int idx = tid; idx < n * NC; idx += NT) {
      const int t = idx / NC;
      const int j = idx - t * NC;
      if (j < D) {
        float o = ob[t * NOS + j] + ob[C * NOS + t * NOS + j];
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
void launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
            const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H, int D) {
  using Cf = Cfg<DP, CHAN>;
  const size_t smem = sizeof(float) * (size_t)Cf::TOTAL;
  uintptr_t al = reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                 reinterpret_cast<uintptr_t>(v.data_ptr<float>());
  if (CHAN) al |= reinterpret_cast<uintptr_t>(gate.data_ptr<float>());
  const bool vec = (D % 4 == 0) && (al % 16 == 0);
  auto kern = gd_tc_kernel<DP, CHAN>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H, Cf::NT, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D, vec);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace
"""

DISPATCH_SRC = r"""
void cgd_v8_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor y) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda() && gate.is_cuda() && y.is_cuda(), "CUDA tensors");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
              v.scalar_type() == torch::kFloat32 && gate.scalar_type() == torch::kFloat32 &&
              y.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
              y.is_contiguous(), "contiguous tensors");
  TORCH_CHECK(q.dim() == 4, "q is (B,T,H,D)");
  const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
  TORCH_CHECK(D >= 1 && D <= 128, "head size must be in [1, 128]");
  if (B == 0 || T == 0 || H == 0) return;
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

CPP_SRC = "void cgd_v8_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor y);"

_ext = load_inline(
    name="cgd_v8_chunk_tf32x3",
    cpp_sources=[CPP_SRC],
    cuda_sources=[CUDA_SRC + DISPATCH_SRC],
    functions=["cgd_v8_forward"],
    extra_cuda_cflags=["-O3", "-lineinfo", "--ptxas-options=-v"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate):
        q = q.contiguous()
        y = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        _ext.cgd_v8_forward(q, k.contiguous(), v.contiguous(), gate.contiguous(), y)
        return y
