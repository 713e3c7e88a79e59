# v12_seed_a: a one-barrier parallel form for short sequences (seed shape), 256 blocks x 256 threads (2 per SM), RT = 4.
# Status: compiled (sm_90, 0 spills), CPU-emulated (float32, the kernel's order), not yet run on a GPU.
# Predicted at seed: events ~3.6-4.6 us (scalar), ~3.8-4.8 us (channel); CUDA-graph replay ~1 us less; see /tmp/notes_v12.md.
#
# T <= 128, D <= 32, D % 4 == 0 (16-byte aligned rows): seed_kernel.  One block per (b, h, tile of
# RT = 4 query rows [t0, t0+RT)), grid (H, B, ntile) with the heaviest (latest) tiles dispatched
# first.  Warp w owns keys [w*KB, w*KB+KB), KB = 16, and runs alone until one block barrier: its
# lanes issue all their global loads at once (coalesced float4 rows of k, v (, gate) for its keys and
# the q tile) into a warp-private strip of shared memory, __syncwarp, dots q_t.k_s -> the strip,
# __syncwarp, then a backward walk over its keys
# s <= p_w = min(block end, t0) multiplying the decay d *= g_s (per column for channel gates) while
# accumulating c_s (q_t.k_s) d v_s[j] for all RT rows; the warp holding t0 adds the in-tile keys
# t0 < s <= t with their own products and the row factors F_r = prod_{t0<u<=t0+r} g_u.  After the
# barrier one thread per (row, column) combines the key blocks by Horner: acc = acc*Q_w + out_w, Q_w =
# the product of block w's gates (times F_r for the tile block).  Decays are only ever products of
# gates (no ratios, no logs): an underflow only drops a contribution whose true size is < ~1e-38.
# All other shapes: v7's dispatch unchanged (par_kernel for T <= 256, v6's kernel otherwise).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_pipeline.h>

namespace {

constexpr float kRenorm = 1e-18f;

template <int DP, int R, int CPT, int NC, int C>
struct Cfg {
  static constexpr int RG = DP / R;
  static constexpr int CG = NC / CPT;
  static constexpr int NT = RG * CG;
  static constexpr int NA = R >= 16 ? 4 : (R >= 8 ? 2 : 1);
  static constexpr int KOFF = C * DP;
  static constexpr int VOFF = 2 * C * DP;
  static constexpr int GOFF = VOFF + C * NC;
  static constexpr int BOFF = GOFF + C;
  static constexpr int BUF = BOFF + C;
  static constexpr int YP = 2 * BUF;
  static constexpr int GP = YP + C * RG * NC;
  static constexpr int CF = GP + C;
  static constexpr int TOTAL = CF + C;
  static_assert(DP % R == 0 && R % 4 == 0, "R");
  static_assert(NC % CPT == 0 && NC % 4 == 0 && C % 2 == 0, "NC/C");
  static_assert(CPT == 1 || CPT == 2 || CPT == 4, "CPT");
  static_assert(NT % 32 == 0 && NT >= 32 && NT <= 1024, "NT");
};

template <int DP, int NC, int C, int NT>
__device__ __forceinline__ void load_chunk(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                           const float* __restrict__ v, const float* __restrict__ gate,
                                           const float* __restrict__ beta, int b, int h, int T, int H, int D,
                                           int c0, int t0, int n, int tid, bool vec) {
  float* qs = buf;
  float* ks = buf + C * DP;
  float* vs = buf + 2 * C * DP;
  float* gs = vs + C * NC;
  float* bs = gs + C;
  const long long rs = (long long)H * D;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * D;
  const int nv = min(NC, D - c0);
  if (vec) {
    const int pr = D >> 2;
    const int tot = n * pr;
    for (int idx = tid; idx < tot; idx += NT) {
      const int t = idx / pr;
      const int e = (idx - t * pr) << 2;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + t * DP + e, q + o, 16);
      __pipeline_memcpy_async(ks + t * DP + e, k + o, 16);
    }
    const int pv = nv >> 2;
    const int totv = n * pv;
    for (int idx = tid; idx < totv; idx += NT) {
      const int t = idx / pv;
      const int e = (idx - t * pv) << 2;
      __pipeline_memcpy_async(vs + t * NC + e, v + base + t * rs + c0 + e, 16);
    }
  } else {
    const int tot = n * D;
    for (int idx = tid; idx < tot; idx += NT) {
      const int t = idx / D;
      const int e = idx - t * D;
      const long long o = base + t * rs + e;
      __pipeline_memcpy_async(qs + t * DP + e, q + o, 4);
      __pipeline_memcpy_async(ks + t * DP + e, k + o, 4);
    }
    const int totv = n * nv;
    for (int idx = tid; idx < totv; idx += NT) {
      const int t = idx / nv;
      const int e = idx - t * nv;
      __pipeline_memcpy_async(vs + t * NC + e, v + base + t * rs + c0 + e, 4);
    }
  }
  for (int t = tid; t < n; t += NT) {
    const long long o = ((long long)b * T + t0 + t) * H + h;
    __pipeline_memcpy_async(gs + t, gate + o, 4);
    __pipeline_memcpy_async(bs + t, beta + o, 4);
  }
}

template <int CPT>
__device__ __forceinline__ void load_cols(const float* p, float (&x)[CPT]) {
  if constexpr (CPT == 1) {
    x[0] = p[0];
  } else if constexpr (CPT == 2) {
    const float2 a = *reinterpret_cast<const float2*>(p);
    x[0] = a.x; x[1] = a.y;
  } else {
    const float4 a = *reinterpret_cast<const float4*>(p);
    x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
  }
}

template <int CPT>
__device__ __forceinline__ void store_cols(float* p, const float (&x)[CPT]) {
  if constexpr (CPT == 1) {
    p[0] = x[0];
  } else if constexpr (CPT == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(x[0], x[1]);
  } else {
    *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
  }
}

// One step on a thread's R x CPT tile: S += k cv^T, then partial y = q^T S over the tile rows.
template <int R, int CPT, int NA>
__device__ __forceinline__ void tile_step(float (&S)[R][CPT], const float* qrow, const float* krow,
                                          const float (&cv)[CPT], float* ydst) {
  float acc[CPT][NA];
#pragma unroll
  for (int c = 0; c < CPT; ++c)
#pragma unroll
    for (int a = 0; a < NA; ++a) acc[c][a] = 0.f;
  const float4* q4 = reinterpret_cast<const float4*>(qrow);
  const float4* k4 = reinterpret_cast<const float4*>(krow);
#pragma unroll
  for (int i4 = 0; i4 < R / 4; ++i4) {
    const float4 kk = k4[i4];
    const float4 qq = q4[i4];
    const float kx[4] = {kk.x, kk.y, kk.z, kk.w};
    const float qx[4] = {qq.x, qq.y, qq.z, qq.w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = 4 * i4 + u;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        S[i][c] = fmaf(kx[u], cv[c], S[i][c]);
        acc[c][i % NA] = fmaf(qx[u], S[i][c], acc[c][i % NA]);
      }
    }
  }
  float out[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    float s = acc[c][0];
#pragma unroll
    for (int a = 1; a < NA; ++a) s += acc[c][a];
    out[c] = s;
  }
  store_cols<CPT>(ydst, out);
}

// Register copy of one step's operands for a thread's tile (software pipelining: the loads of step
// t+1 are issued before the FMAs of step t, so shared-memory latency hides behind arithmetic).
template <int R, int CPT>
struct StepOps {
  float4 q[R / 4];
  float4 k[R / 4];
  float v[CPT];
  float s[CPT];
};

template <int R, int CPT, bool PER_COL>
__device__ __forceinline__ void load_ops(StepOps<R, CPT>& o, const float* qrow, const float* krow,
                                         const float* vp, const float* sp) {
  const float4* q4 = reinterpret_cast<const float4*>(qrow);
  const float4* k4 = reinterpret_cast<const float4*>(krow);
#pragma unroll
  for (int i4 = 0; i4 < R / 4; ++i4) {
    o.q[i4] = q4[i4];
    o.k[i4] = k4[i4];
  }
  load_cols<CPT>(vp, o.v);
  if constexpr (PER_COL) {
    load_cols<CPT>(sp, o.s);
  } else {
    const float s = sp[0];
#pragma unroll
    for (int c = 0; c < CPT; ++c) o.s[c] = s;
  }
}

template <int R, int CPT, int NA>
__device__ __forceinline__ void tile_step_regs(float (&S)[R][CPT], const StepOps<R, CPT>& o, float* ydst) {
  float cv[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) cv[c] = o.v[c] * o.s[c];
  float acc[CPT][NA];
#pragma unroll
  for (int c = 0; c < CPT; ++c)
#pragma unroll
    for (int a = 0; a < NA; ++a) acc[c][a] = 0.f;
#pragma unroll
  for (int i4 = 0; i4 < R / 4; ++i4) {
    const float kx[4] = {o.k[i4].x, o.k[i4].y, o.k[i4].z, o.k[i4].w};
    const float qx[4] = {o.q[i4].x, o.q[i4].y, o.q[i4].z, o.q[i4].w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = 4 * i4 + u;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        S[i][c] = fmaf(kx[u], cv[c], S[i][c]);
        acc[c][i % NA] = fmaf(qx[u], S[i][c], acc[c][i % NA]);
      }
    }
  }
  float out[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    float s = acc[c][0];
#pragma unroll
    for (int a = 1; a < NA; ++a) s += acc[c][a];
    out[c] = s;
  }
  store_cols<CPT>(ydst, out);
}

template <int DP, int R, int CPT, int NC, int C>
__global__ void __launch_bounds__(Cfg<DP, R, CPT, NC, C>::NT)
sgd_chunk_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                 const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
                 int T, int H, int D, bool vec) {
  using Cf = Cfg<DP, R, CPT, NC, C>;
  constexpr int NT = Cf::NT, RG = Cf::RG, CG = Cf::CG, NA = Cf::NA;
  extern __shared__ float4 smem_f4[];
  float* sm = reinterpret_cast<float*>(smem_f4);
  const int tid = threadIdx.x;
  const int ncb = (D + NC - 1) / NC;
  const int cb = blockIdx.x % ncb;
  const int bh = blockIdx.x / ncb;
  const int h = bh % H;
  const int b = bh / H;
  const int c0 = cb * NC;

  for (int i = tid; i < 2 * Cf::BUF; i += NT) sm[i] = 0.f;
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
  load_chunk<DP, NC, C, NT>(sm, q, k, v, gate, beta, b, h, T, H, D, c0, 0, min(C, T), tid, vec);
  __pipeline_commit();

  const int rg = tid / CG;
  const int cg = tid - rg * CG;
  const int col0 = cg * CPT;
  float* yp = sm + Cf::YP;
  float* Gp = sm + Cf::GP;
  float* cf = sm + Cf::CF;

  float S[R][CPT];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int c = 0; c < CPT; ++c) S[i][c] = 0.f;

  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const float* cur = sm + (ch & 1) * Cf::BUF;
    if (ch + 1 < nchunks)
      load_chunk<DP, NC, C, NT>(sm + ((ch + 1) & 1) * Cf::BUF, q, k, v, gate, beta, b, h, T, H, D, c0,
                                t0 + C, min(C, T - t0 - C), tid, vec);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();

    const float* qs = cur;
    const float* ks = cur + Cf::KOFF;
    const float* vs = cur + Cf::VOFF;
    const float* gs = cur + Cf::GOFF;
    const float* bs = cur + Cf::BOFF;

    // Warp 0: cumulative gate products from the chunk start (multiplicative scan) and beta/G.
    int pred = 0;
    if (tid < 32) {
      const int lane = tid;
      float carry = 1.f;
      for (int base = 0; base < n; base += 32) {
        const int t = base + lane;
        float g = (t < n) ? gs[t] : 1.f;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
          const float o = __shfl_up_sync(0xffffffffu, g, off);
          if (lane >= off) g *= o;
        }
        g *= carry;
        if (t < n) {
          Gp[t] = g;
          cf[t] = bs[t] / g;
        }
        carry = __shfl_sync(0xffffffffu, g, 31);
      }
      pred = (lane == 0) && !(carry >= kRenorm);
    }
    const int safe = __syncthreads_or(pred);

    if (!safe) {
      StepOps<R, CPT> nx;
      {
        const int tt = 0;
        load_ops<R, CPT, false>(nx, qs + rg * R, ks + rg * R, vs + col0, cf + tt);
      }
#pragma unroll 2
      for (int t = 0; t < n; ++t) {
        const StepOps<R, CPT> cu = nx;
        const int tt = (t + 1 < n) ? t + 1 : t;
        load_ops<R, CPT, false>(nx, qs + tt * DP + rg * R, ks + tt * DP + rg * R, vs + tt * NC + col0, cf + tt);
        tile_step_regs<R, CPT, NA>(S, cu, yp + (t * RG + rg) * NC + col0);
      }
      const float ge = Gp[n - 1];
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int c = 0; c < CPT; ++c) S[i][c] *= ge;
    } else {
      // Tiny gates somewhere in this chunk: renormalise whenever G would fall below kRenorm.
      float G = 1.f;
      for (int t = 0; t < n; ++t) {
        const float g = gs[t];
        const float Gn = G * g;
        if (!(Gn >= kRenorm)) {
#pragma unroll
          for (int i = 0; i < R; ++i)
#pragma unroll
            for (int c = 0; c < CPT; ++c) S[i][c] = (S[i][c] * G) * g;
          G = 1.f;
        } else {
          G = Gn;
        }
        const float coef = bs[t] / G;
        float cv[CPT];
        load_cols<CPT>(vs + t * NC + col0, cv);
#pragma unroll
        for (int c = 0; c < CPT; ++c) cv[c] *= coef;
        tile_step<R, CPT, NA>(S, qs + t * DP + rg * R, ks + t * DP + rg * R, cv, yp + (t * RG + rg) * NC + col0);
        if (tid == 0) Gp[t] = G;
      }
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int c = 0; c < CPT; ++c) S[i][c] *= G;
    }
    __syncthreads();

    // Reduce the row-group partials, scale by G_t, write y.
    const int tot = n * NC;
    for (int idx = tid; idx < tot; idx += NT) {
      const int t = idx / NC;
      const int col = idx - t * NC;
      if (c0 + col < D) {
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < RG; ++r) s += yp[(t * RG + r) * NC + col];
        y[((long long)b * T + t0 + t) * ((long long)H * D) + (long long)h * D + c0 + col] = s * Gp[t];
      }
    }
  }
}

template <int DP, int R, int CPT, int NC, int C>
void launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& gate,
            const torch::Tensor& beta, torch::Tensor& y, int B, int T, int H, int D) {
  using Cf = Cfg<DP, R, CPT, NC, C>;
  const int ncb = (D + NC - 1) / NC;
  const size_t smem = sizeof(float) * (size_t)Cf::TOTAL;
  // 16-byte cp.async only when every row and column slice is 16-byte aligned.
  const bool vec = (D % 4 == 0) && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) |
                                    reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                                    reinterpret_cast<uintptr_t>(v.data_ptr<float>()) |
                                    reinterpret_cast<uintptr_t>(gate.data_ptr<float>())) % 16 == 0);
  auto kern = sgd_chunk_kernel<DP, R, CPT, NC, C>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  kern<<<B * H * ncb, Cf::NT, smem, at::cuda::getCurrentCUDAStream()>>>(
      q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
      beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D, vec);
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
  constexpr int RT = 4, KB = 16, NW = 8, MINB = 2;
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

# Per padded head size DP: launch<DP, R (rows/thread), CPT (cols/thread), NC (cols/block), C (chunk)>.
DISPATCH_SRC = r"""
void sgd_v12a_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate,
                    torch::Tensor beta, torch::Tensor y) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda() && gate.is_cuda() && beta.is_cuda(), "CUDA tensors");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
              v.scalar_type() == torch::kFloat32 && gate.scalar_type() == torch::kFloat32 &&
              beta.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
              beta.is_contiguous(), "contiguous tensors");
  TORCH_CHECK(q.dim() == 4, "q is (B,T,H,D)");
  const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
  TORCH_CHECK(D >= 1 && D <= 128, "head size must be in [1, 128]");
  TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous() && y.sizes() == q.sizes(), "y");
  TORCH_CHECK(gate.numel() == ((int64_t)B * T * H) && (beta.numel() == (int64_t)B * T * H) && k.sizes() == q.sizes() && v.sizes() == q.sizes(), "shapes");
  if (B == 0 || T == 0 || H == 0) return;
  if (seed_dispatch<false>(q, k, v, gate, beta.data_ptr<float>(), y, B, T, H, D)) return;
  if (par_dispatch<false>(q, k, v, gate, beta.data_ptr<float>(), y, B, T, H, D)) return;
  if (D <= 32) {
    launch<32, 4, 1, 8, 128>(q, k, v, gate, beta, y, B, T, H, D);
  } else if (D <= 64) {
    launch<64, 16, 2, 64, 64>(q, k, v, gate, beta, y, B, T, H, D);
  } else {
    launch<128, 16, 4, 128, 16>(q, k, v, gate, beta, y, B, T, H, D);
  }
}
"""

CPP_SRC = "void sgd_v12a_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta, torch::Tensor y);"

_ext = load_inline(
    name="sgd_v12_seed_a",
    cpp_sources=[CPP_SRC],
    cuda_sources=[CUDA_SRC + DISPATCH_SRC],
    functions=["sgd_v12a_forward"],
    extra_cuda_cflags=["-O3", "-lineinfo", "--ptxas-options=-v"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        q = q.contiguous()
        y = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        _ext.sgd_v12a_forward(q, k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous(), y)
        return y
