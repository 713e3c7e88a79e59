"""Write .gpu/v62_krowmax.py from candidates/scalar_gated_delta/v56_kuni.py (session 26). The prep warps set the chunk
(v61a), and their splits run at a third of their speed alone, bound by the shared-memory traffic around them
(wgbench2). v56 reads k a second time before its split, for the one scale a chunk of K^T Vt's k pieces (the k
maximum pass). v62 takes that scale from A's k split instead: its 1 / scale by step are powers of two monotone in
each step's largest |k|, so their maximum is the chunk's 1 / scale exactly. Round one splits q blocks 0-2 and A's k
blocks 4-7 (seven warps), the prep barrier, then round two q block 3 and K^T Vt's k blocks 8-11 (prep warps 2-6).
Same scales, same pieces: bitwise v56."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v56_kuni: v54_famat (below)", """# v62_krowmax: v56_kuni (below) with K^T Vt's k scale a chunk taken from A's k split (the largest of its 1 / scale
# by step) instead of a pass over k before the split: two rounds of split blocks around the prep barrier.
# v56_kuni: v54_famat (below)""")
start = src.index("  // k's largest |value| over the chunk (a share a prep warp, then the prep barrier)")
end = src.index("  wg_proxy_fence();  // the pieces visible to wgmma (A's after the vote's barrier")
old = src[start:end]
assert "for (int blk = pw; blk < 12; blk += W::NPW)" in old and old.count("prep_sync<NP>();") == 1
new = """  auto split_block = [&](int blk, float ksc) {
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
  };
  // Round one: q blocks 0-2 and A's k blocks 4-7, which write k's 1 / scale by step.
  static_assert(W::NPW == 7, "seven prep warps: one block each in round one");
  split_block(pw < 3 ? pw : pw + 1, 0.f);
  prep_sync<NP>();
  // K^T Vt's k pieces take one scale a chunk: pow2_scale of k's largest |value|. Its 1 / scale is the largest of the
  // steps' (pow2_scale is monotone in the exponent alone), and the scale the reciprocal of a power of two.
  float kinv = sm[W::RKA + nb * C + lane];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) kinv = fmaxf(kinv, __shfl_xor_sync(kFull, kinv, off));
  const float ksc = __uint_as_float((254u - (__float_as_uint(kinv) >> 23)) << 23);
  if (ptid == 0) sm[W::RK + nb * W::DP] = kinv;
  // Round two: q block 3 and K^T Vt's k blocks 8-11 on prep warps 2-6.
  if (pw >= 2) split_block(pw == 2 ? 3 : pw + 5, ksc);
"""
src = src[:start] + new + src[end:]
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v62_krowmax"').replace("sgd_v56_forward", "sgd_v62_forward")
(ROOT / ".gpu/v62_krowmax.py").write_text(src)
print("wrote .gpu/v62_krowmax.py")
