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

