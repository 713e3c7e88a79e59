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

