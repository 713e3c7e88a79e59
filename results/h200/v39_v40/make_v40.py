"""Write candidates/scalar_gated_delta/v40_async_qs0.py from v39a_one_wait.py (run make_v39.py first): at D = 64 the
consumers stop holding their warps on register-operand wgmma for Q S0. Each chunk they (1) wait for the previous
chunk's K^T Vt and fold it into the state, (2) build the Vt^T fragments and run A Vt on mma.sync into a fresh O,
(3) write the split state S^T hi / lo to shared memory (the A operand, K-major blocked like q), (4) issue Q S0 as 24
wgmma m64n32k8 with both operands in shared memory, accumulating onto A Vt, and store the previous chunk's y while it
runs, (5) issue this chunk's K^T Vt (waited at the next chunk's top), (6) wait for Q S0 only and keep y(c) = G_t O
in registers until the next chunk. Same products as v29a, summed in another order: not bitwise. D = 128 is v39a's."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

FUNCS = r"""// d (64 x 32 per warpgroup, 16 registers) += a (64 x 8, shared memory) * b (8 x 32, shared memory).
__device__ __forceinline__ void wg_mma_n32_ss(float (&d)[4][4], uint64_t ad, uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "l"(ad), "l"(bd));
}
__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 3, 128;" ::: "memory"); }
// Offset (floats) of S^T (M = state row j, K = state column d) as a wgmma A operand at D = 64: core matrices of
// 8 rows x 4 columns, 128 B apart along d, 2 KB along j.
__device__ __forceinline__ int wsg_stoff(int j, int d) { return (j >> 3) * 512 + (d >> 2) * 32 + (j & 7) * 4 + (d & 3); }

// y rows t < n of one chunk from registers (already scaled by G_t).
__device__ __forceinline__ void wsg_store_y(float* yb, const float (&Y)[4][4], long long rs, int n, int j0, int tig) {
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int t = 8 * nt + 2 * tig;
    if (t < n) {
      yb[t * rs + j0] = Y[nt][0];
      yb[t * rs + j0 + 8] = Y[nt][2];
    }
    if (t + 1 < n) {
      yb[(t + 1) * rs + j0] = Y[nt][1];
      yb[(t + 1) * rs + j0 + 8] = Y[nt][3];
    }
  }
}

// The consumer warpgroup at D = 64 (warps 0-3), Q S0 from shared memory; see the file's header.
template <int DP>
__device__ __forceinline__ void wsg_consume_async(float* sm, float* __restrict__ y, int b, int h, int T, int H,
                                                  int nchunks, int warp, int gid, int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, NCS = W::NCS, CS = W::CS, NKK = DP / 8;
  static_assert(DP == 64, "one consumer warpgroup");
  const int j0 = 16 * warp + gid;
  const long long rs = (long long)H * DP;
  const int* sfl = reinterpret_cast<const int*>(sm + W::SF);
  float* sth = sm + W::ST;
  float* stl = sth + DP * DP;
  float S[NKK][4];
#pragma unroll
  for (int kk = 0; kk < NKK; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;
  float acc[1][8][4];         // the last chunk's K^T Vt, in flight while kpend
  uint32_t vh[4][4], vl[4][4];  // its A operand, held until then
  float Y[4][4];              // the last chunk's y, scaled, stored while ypend
  bool kpend = false, ypend = false;
  float GCp = 1.f;
  int np = 0;
  float* ybp = y;
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
    if (kpend) {  // S = G_C (S + K^T Vt) of the last chunk
      wg_wait0();
      wg_keep(acc[0]);
      wg_keep(vh);
      wg_keep(vl);
#pragma unroll
      for (int kk = 0; kk < 8; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) S[kk][e] = (S[kk][e] + acc[0][kk][e]) * GCp;
      kpend = false;
    }
    if (!sfl[nb]) {
      wsg_vt_frags<DP>(vh, vl, vsm, sm + W::CF + nb * C, j0, tig);
      // ---- O^T = Vt^T A^T (mma.sync), then + S^T Q^T (wgmma)
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
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
      // S^T hi / lo into shared memory: S[kk][e] is row j0 (e < 2) or j0 + 8, column 8 kk + tig (+ 4 if e odd)
#pragma unroll
      for (int kk = 0; kk < NKK; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          uint32_t hi, lo;
          split(S[kk][e], hi, lo);
          const int o = wsg_stoff(j0 + 8 * (e >> 1), 8 * kk + tig + 4 * (e & 1));
          reinterpret_cast<uint32_t*>(sth)[o] = hi;
          reinterpret_cast<uint32_t*>(stl)[o] = lo;
        }
      wg_proxy_fence();
      consumer_sync();  // the whole S^T written
      wg_keep(O);
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < NKK; ++kk) {
        const uint64_t sh = wg_desc(sth + 2 * kk * 32, 128, 2048), sl = wg_desc(stl + 2 * kk * 32, 128, 2048);
        const uint64_t dh = wg_desc(qs + 2 * kk * 32, 128, 32 * DP), dl = wg_desc(ql + 2 * kk * 32, 128, 32 * DP);
        wg_mma_n32_ss(O, sl, dh);
        wg_mma_n32_ss(O, sh, dl);
        wg_mma_n32_ss(O, sh, dh);
      }
      wg_commit();
      if (ypend) wsg_store_y(ybp, Y, rs, np, j0, tig);  // the last chunk's y while Q S0 runs
      wsg_ktvt_issue<1>(acc, vh, vl, kth, ktl);         // waited at the next chunk's top
      wg_wait1();                                        // Q S0 done
      wg_keep(O);
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int t = 8 * nt + 2 * tig;
        const float g0 = gsc[t], g1 = gsc[t + 1];
        Y[nt][0] = O[nt][0] * g0;
        Y[nt][1] = O[nt][1] * g1;
        Y[nt][2] = O[nt][2] * g0;
        Y[nt][3] = O[nt][3] * g1;
      }
      ypend = true;
      kpend = true;
      ybp = yb;
      np = n;
      GCp = gsc[C - 1];
    } else {
      if (ypend) wsg_store_y(ybp, Y, rs, np, j0, tig);
      ypend = false;
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
  if (kpend) {  // nothing reads the last state; its operands stay put until the tensor core is done
    wg_wait0();
    wg_keep(acc[0]);
    wg_keep(vh);
    wg_keep(vl);
  }
  if (ypend) wsg_store_y(ybp, Y, rs, np, j0, tig);
}

"""


def main():
    src = (P / "v39a_one_wait.py").read_text()
    subs = [
        ("  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks\n  static constexpr int TOTAL = SF + 4;\n",
         "  static constexpr int SF = CF + 2 * C;             // safe flags, 2 chunks\n"
         "  static constexpr bool ASY = DP == 64;             // consumers: Q S0 from the state in shared memory\n"
         "  static constexpr int ST = SF + 4;                 // S^T hi then lo when ASY\n"
         "  static constexpr int TOTAL = ST + (ASY ? 2 * DP * DP : 0);\n"),
        ("template <int DP>\n__global__ void __launch_bounds__(512, 1)\ngd_wsg_kernel(",
         FUNCS + "template <int DP>\n__global__ void __launch_bounds__(512, 1)\ngd_wsg_kernel("),
        ("""  if constexpr (W::REG_C > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(W::REG_C));
""", """  if constexpr (W::REG_C > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(W::REG_C));
  if constexpr (W::ASY) {
    wsg_consume_async<DP>(sm, y, b, h, T, H, nchunks, warp, gid, tig);
    return;
  }
"""),
        ("sgd_v39a_forward", "sgd_v40_forward"),
        ('name="sgd_v39a_one_wait",', 'name="sgd_v40_async_qs0",'),
    ]
    for old, new in subs:
        n = src.count(old)
        assert n >= 1 and (n == 1 or old.startswith("sgd_")), (old[:80], n)
        src = src.replace(old, new)
    first = src.index("\n") + 1
    src = ("# v40_async_qs0: v39a_one_wait (below) with, at D = 64, Q S0 from the state in shared memory (both wgmma\n"
           "# operands there, so the consumers run A Vt and the last chunk's y stores beside it) and K^T Vt waited a chunk late.\n"
           + src[first:])
    (P / "v40_async_qs0.py").write_text(src)
    print("wrote", P / "v40_async_qs0.py")


main()
