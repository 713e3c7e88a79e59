"""Write .gpu/v58a_prep_late_k.py and .gpu/v58b_prep_tree.py from candidates/scalar_gated_delta/v56_kuni.py
(session 25). probe56 on v56: the first prep warpgroup arrives ~160 cycles after the consumers, its scan and split
take 3,800-4,960 cycles, and the warps with one split block 3,170, so the k maximum pass and the prep barrier v56
added (before any split) cost ~2,400 of them; ncu: barrier stalls are the largest reason (1.59 warps per issue).
v58a: no maximum pass and no barrier before the split. The q blocks (the first prep warpgroup) and k's blocks for A
(the other three prep warps, one of them two) come before the vote; K^T Vt's k blocks after it, on the two warps that
build no A, while the first prep warpgroup builds A. Their scale is the chunk's: the largest of the step scales the
A split stored (the same power of two v56 derives from k's largest |value|, so the pieces and outputs are v56's).
v58b: v58a with the consumers' row maxima of S^T as trees instead of one chain of 16."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:200], src.count(old))
    src = src.replace(old, new)


sub("""  static constexpr int KMX = SF + 4;               // each prep warp's share of k's largest |value|
  static constexpr int TOTAL = KMX + 8;""", """  static constexpr int TOTAL = SF + 4;""")
sub("""  const float* qr = qkb + W::QB;
  const float* kr = qkb + W::KR;
  // k's largest |value| over the chunk (a share a prep warp, then the prep barrier): K^T Vt's k pieces take one scale
  float km = 0.f;
  for (int idx = ptid; idx < C * W::DP / 4; idx += NP) {
    const float4 x = *reinterpret_cast<const float4*>(kr + (idx >> 5) * W::DPS + 4 * (idx & 31));
    km = fmaxf(km, fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(x.z), fabsf(x.w))));
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) km = fmaxf(km, __shfl_xor_sync(kFull, km, off));
  if (lane == 0) sm[W::KMX + pw] = km;
  prep_sync<NP>();
#pragma unroll
  for (int w = 0; w < W::NPW; ++w) km = fmaxf(km, sm[W::KMX + w]);
  float ksc, kinv;
  pow2_scale(km, ksc, kinv);
  if (ptid == 0) sm[W::RK + nb * W::DP] = kinv;
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
                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, bt, lane);
    }
  }
  wg_proxy_fence();  // the pieces visible to wgmma (A's after the vote's barrier, the consumers' after the CTA's)
  const int safe = prep_vote<NP>(pred);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (!safe && pw < 4) wsh_amat(sm, nb, pw, gid, tig);
}""", """  const float* qr = qkb + W::QB;
  const float* kr = qkb + W::KR;
  // Before the vote, what A needs: q's blocks on the first prep warpgroup, k's by step on the other three warps (the
  // first of them two blocks).
  static_assert(W::NPW == 7, "four q blocks on warps 0..3, k's blocks for A on 4..6, K^T Vt's k on 5 and 6");
  if (pw < 4) {
    wsh_split_q<false>(qr, reinterpret_cast<uint32_t*>(sm + W::QH + nb * W::H16),
                       reinterpret_cast<uint32_t*>(sm + W::QL + nb * W::H16), sm + W::RQ + nb * C, pw, lane);
  } else {
#pragma unroll 1
    for (int bt = pw - 4; bt < 4; bt += 3)
      wsh_split_q<true>(kr, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                        reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C, bt, lane);
  }
  wg_proxy_fence();  // the pieces visible to wgmma (A's after the vote's barrier, the consumers' after the CTA's)
  const int safe = prep_vote<NP>(pred);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (safe) return;
  if (pw < 4) {
    wsh_amat(sm, nb, pw, gid, tig);
  } else if (pw > 4) {
    // K^T Vt's k pieces under one scale for the chunk: the smallest step scale of k's split for A (the vote's barrier
    // made them visible), the power of two a maximum over the whole chunk gives. Two blocks a warp.
    float kinv = sm[W::RKA + nb * C + lane];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) kinv = fmaxf(kinv, __shfl_xor_sync(kFull, kinv, off));
    const float ksc = 1.f / kinv;  // a power of two: exact
    if (pw == 5 && lane == 0) sm[W::RK + nb * W::DP] = kinv;
#pragma unroll 1
    for (int bt = 2 * (pw - 5); bt < 2 * (pw - 5) + 2; ++bt)
      wsh_split_k(kr, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, bt, lane);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
  }
}""")
sub("""// Prep warps: the gate scan and vote; the fp16 pieces (q by step, k by step for A, k by state column for K^T Vt:
// twelve blocks, warp pw takes blocks pw and pw + 7), also on a safe chunk (its path reads them); then, unless the
// chunk is safe, behind a prep barrier, A on the first prep warpgroup.""",
    """// Prep warps: the gate scan and vote; q's and k's fp16 pieces by step (also on a safe chunk: its path reads them);
// then, unless the chunk is safe, behind the vote's barrier, A on the first prep warpgroup and, v58, K^T Vt's k pieces
// (by state column, one scale a chunk) on prep warps 5 and 6.""")
V58A = src
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v58a_prep_late_k"').replace("sgd_v56_forward", "sgd_v58a_forward")
src = ("# v58a_prep_late_k: v56_kuni (below) with K^T Vt's k split after the vote, beside A, its chunk scale from A's step "
       "scales (D = 128).\n" + src)
(ROOT / ".gpu/v58a_prep_late_k.py").write_text(src)
print("wrote v58a_prep_late_k")

src = V58A
sub("""        float m0 = 0.f, m1 = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          m0 = fmaxf(m0, fmaxf(fabsf(S[i][0]), fabsf(S[i][1])));
          m1 = fmaxf(m1, fmaxf(fabsf(S[i][2]), fabsf(S[i][3])));
        }""", """        float r0[8], r1[8];  // the row maxima as trees (a chain of 16 before)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          r0[i] = fmaxf(fmaxf(fabsf(S[2 * i][0]), fabsf(S[2 * i][1])), fmaxf(fabsf(S[2 * i + 1][0]), fabsf(S[2 * i + 1][1])));
          r1[i] = fmaxf(fmaxf(fabsf(S[2 * i][2]), fabsf(S[2 * i][3])), fmaxf(fabsf(S[2 * i + 1][2]), fabsf(S[2 * i + 1][3])));
        }
#pragma unroll
        for (int w = 4; w > 0; w >>= 1)
#pragma unroll
          for (int i = 0; i < w; ++i) {
            r0[i] = fmaxf(r0[i], r0[i + w]);
            r1[i] = fmaxf(r1[i], r1[i + w]);
          }
        float m0 = r0[0], m1 = r1[0];""")
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v58b_prep_tree"').replace("sgd_v56_forward", "sgd_v58b_forward")
src = ("# v58b_prep_tree: v58a_prep_late_k with the consumers' row maxima of S^T as trees (D = 128).\n" + src)
(ROOT / ".gpu/v58b_prep_tree.py").write_text(src)
print("wrote v58b_prep_tree")

# ---- v58c: v58a with k's fourth block for A on the load warp, so that no warp splits two blocks before the vote, and
# K^T Vt's k a block each on prep warps 4..6 and the load warp after it
src = V58A
sub("""  static_assert(W::NPW == 7, "four q blocks on warps 0..3, k's blocks for A on 4..6, K^T Vt's k on 5 and 6");
  if (pw < 4) {
    wsh_split_q<false>(qr, reinterpret_cast<uint32_t*>(sm + W::QH + nb * W::H16),
                       reinterpret_cast<uint32_t*>(sm + W::QL + nb * W::H16), sm + W::RQ + nb * C, pw, lane);
  } else {
#pragma unroll 1
    for (int bt = pw - 4; bt < 4; bt += 3)
      wsh_split_q<true>(kr, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                        reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C, bt, lane);
  }
  wg_proxy_fence();  // the pieces visible to wgmma (A's after the vote's barrier, the consumers' after the CTA's)
  const int safe = prep_vote<NP>(pred);""", """  static_assert(W::NPW == 7 && W::NLW == 1, "q's blocks on prep warps 0..3, k's for A on 4..6 and the load warp");
  if (pw < 4) {
    wsh_split_q<false>(qr, reinterpret_cast<uint32_t*>(sm + W::QH + nb * W::H16),
                       reinterpret_cast<uint32_t*>(sm + W::QL + nb * W::H16), sm + W::RQ + nb * C, pw, lane);
  } else {
    wsh_split_q<true>(kr, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                      reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C, pw - 4, lane);
  }
  wg_proxy_fence();  // the pieces visible to wgmma (A's after the vote's barrier, the consumers' after the CTA's)
  const int safe = prep_vote<NP + 32>(pred);  // the load warp (pw 7) votes too""")
sub("""  } else if (pw > 4) {
    // K^T Vt's k pieces under one scale for the chunk: the smallest step scale of k's split for A (the vote's barrier
    // made them visible), the power of two a maximum over the whole chunk gives. Two blocks a warp.""",
    """  } else {
    // K^T Vt's k pieces under one scale for the chunk: the smallest step scale of k's split for A (the vote's barrier
    // made them visible), the power of two a maximum over the whole chunk gives. A block a warp.""")
sub("""    if (pw == 5 && lane == 0) sm[W::RK + nb * W::DP] = kinv;
#pragma unroll 1
    for (int bt = 2 * (pw - 5); bt < 2 * (pw - 5) + 2; ++bt)
      wsh_split_k(kr, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                  reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, bt, lane);""",
    """    if (pw == 4 && lane == 0) sm[W::RK + nb * W::DP] = kinv;
    wsh_split_k(kr, reinterpret_cast<uint32_t*>(sm + W::KH + nb * W::H16),
                reinterpret_cast<uint32_t*>(sm + W::KL + nb * W::H16), ksc, pw - 4, lane);""")
sub("""// then, unless the chunk is safe, behind the vote's barrier, A on the first prep warpgroup and, v58, K^T Vt's k pieces
// (by state column, one scale a chunk) on prep warps 5 and 6.""",
    """// then, unless the chunk is safe, behind the vote's barrier, A on the first prep warpgroup and, v58, K^T Vt's k pieces
// (by state column, one scale a chunk) on prep warps 4..6 and (v58c) the load warp, pw 7, which also splits k's fourth
// block for A and votes.""")
sub("""    producer_sync<W::NPROD>();  // chunk 0's inputs visible to the prep warps
    if (!loader) wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);""",
    """    producer_sync<W::NPROD>();  // chunk 0's inputs visible to the prep warps
    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);  // the load warp takes a share (v58c)""")
sub("""          __pipeline_commit();
        } else {
          wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        }""", """          __pipeline_commit();
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);  // the load warp too (v58c)""")
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v58c_prep_loader"').replace("sgd_v56_forward", "sgd_v58c_forward")
src = ("# v58c_prep_loader: v58a_prep_late_k with the load warp in the prep's split (a block of k for A before the vote, "
       "one of K^T Vt's k after it), so no warp splits two blocks (D = 128).\n" + src)
(ROOT / ".gpu/v58c_prep_loader.py").write_text(src)
print("wrote v58c_prep_loader")
