"""Write .gpu/v60_astack.py from candidates/scalar_gated_delta/v56_kuni.py (session 25). The prep warps finish each
chunk only ~0-500 cycles before the consumers (probe56 on v56), and their last phase is A = Q K^T: 8 k steps x 3
wgmma m64n32k16 whose rows 32..63 are discarded. v60 lays q's hi and lo pieces of a chunk next to each other (as
v57b did), so one M = 64 operand is [Q hi; Q lo]: 8 k steps x 2 wgmma (K lo, then K hi) give Q hi K^T in rows 0..31
and Q lo K^T in rows 32..63, which the warps holding them (prep warps 2, 3) hand to warps 0, 1 through A's array
(named barrier 3 among the four) to be summed: 16 wgmma instead of 24 and a third less tensor work (Q lo K lo comes
along)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:200], src.count(old))
    src = src.replace(old, new)


sub("""  static constexpr int QL = QH + 2 * H16;           // q lo""",
    """  static constexpr int QL = QH + H16;               // q lo (v60: right after the chunk's hi, so [hi; lo] is one
                                                    // M = 64 operand)""")
sub("""  static constexpr int KAH = QL + 2 * H16;""", """  static constexpr int KAH = QH + 4 * H16;""")
assert src.count("W::QH + nb * W::H16") == 4 and src.count("W::QL + nb * W::H16") == 4
src = src.replace("W::QH + nb * W::H16", "W::QH + 2 * nb * W::H16").replace("W::QL + nb * W::H16", "W::QL + 2 * nb * W::H16")
sub("""  const float* qh = sm + W::QH + 2 * nb * W::H16;
  const float* ql = sm + W::QL + 2 * nb * W::H16;
  const float* kh = sm + W::KAH + nb * W::H16;
  const float* kl = sm + W::KAL + nb * W::H16;""", """  const float* qh = sm + W::QH + 2 * nb * W::H16;  // q lo follows: rows 32..63 of the M = 64 operand
  const float* kh = sm + W::KAH + nb * W::H16;
  const float* kl = sm + W::KAL + nb * W::H16;""")
sub("""  for (int kk = 0; kk < 8; ++kk) {  // columns 16 kk ..: 128 halves (64 floats) a step
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
}""", """  for (int kk = 0; kk < 8; ++kk) {  // columns 16 kk ..: 128 halves (64 floats) a step
    const uint64_t dq = wg_desc(qh + 64 * kk, 128, 2048);  // [q hi; q lo]
    const uint64_t dkh = wg_desc(kh + 64 * kk, 128, 2048), dkl = wg_desc(kl + 64 * kk, 128, 2048);
    wh_mma_ss_n32(a, dq, dkl);
    wh_mma_ss_n32(a, dq, dkh);
  }
  wg_commit();
  wg_wait0();
  wg_keep(a);
  const int t = 16 * (pw & 1) + gid;
  float* am = sm + W::AM + nb * C * CS;
  if (pw >= 2) {  // rows 32..63 hold q lo's products: to warps pw - 2 (the same lanes' places) through A's array
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const int s = 8 * nt + 2 * tig;
      *reinterpret_cast<float2*>(am + t * CS + s) = make_float2(a[nt][0], a[nt][1]);
      *reinterpret_cast<float2*>(am + (t + 8) * CS + s) = make_float2(a[nt][2], a[nt][3]);
    }
  }
  asm volatile("bar.sync 3, 128;" ::: "memory");  // the first prep warpgroup only
  if (pw >= 2) return;
  const float* rq = sm + W::RQ + nb * C;
  const float* rk = sm + W::RKA + nb * C;
  const float r0 = rq[t], r1 = rq[t + 8];
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int s = 8 * nt + 2 * tig;
    const float2 c = *reinterpret_cast<const float2*>(rk + s);
    const float2 p0 = *reinterpret_cast<const float2*>(am + t * CS + s);
    const float2 p1 = *reinterpret_cast<const float2*>(am + (t + 8) * CS + s);
    *reinterpret_cast<float2*>(am + t * CS + s) = make_float2((s <= t) ? (a[nt][0] + p0.x) * (r0 * c.x) : 0.f,
                                                              (s + 1 <= t) ? (a[nt][1] + p0.y) * (r0 * c.y) : 0.f);
    *reinterpret_cast<float2*>(am + (t + 8) * CS + s) =
        make_float2((s <= t + 8) ? (a[nt][2] + p1.x) * (r1 * c.x) : 0.f,
                    (s + 1 <= t + 8) ? (a[nt][3] + p1.y) * (r1 * c.y) : 0.f);
  }
}""")
sub("""// A = causal(Q K^T) of chunk c on the first prep warpgroup (warps pw 0..3, rows t = 16 pw + gid and + 8): 8 k steps
// x 3 wgmma from the fp16 pieces, unscaled by step (q's scale for t, k's for s), masked and stored for A Vt.""",
    """// A = causal(Q K^T) of chunk c on the first prep warpgroup (warps pw 0..3, rows t = 16 (pw & 1) + gid and + 8): 8 k
// steps x 2 wgmma with [Q hi; Q lo] as one M = 64 operand (v60), the two halves summed through A's array, unscaled by
// step (q's scale for t, k's for s), masked and stored for A Vt.""")
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v60_astack"').replace("sgd_v56_forward", "sgd_v60_forward")
src = ("# v60_astack: v56_kuni (below) with A = [Q hi; Q lo] K^T as one M = 64 operand: 16 wgmma instead of 24 (D = 128).\n"
       + src)
(ROOT / ".gpu/v60_astack.py").write_text(src)
print("wrote v60_astack")
