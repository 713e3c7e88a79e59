"""Write .gpu/v61a_presplit.py from candidates/scalar_gated_delta/v56_kuni.py (session 26). wgbench (session 26): the
consumers' split of the state into fp16 pieces costs ~1,100 cycles on two warpgroups alone (Q S0's 24 wgmma ~1,030),
and a warp issuing register-operand wgmma cannot run it beside them. v61a splits chunk c+1's state right after chunk
c's update, before the CTA barrier, where the consumers waited ~500-650 cycles for the prep warps (probe56); the
pieces (64 registers) cross the barrier and Q S0 issues its wgmma at the loop top."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / "candidates/scalar_gated_delta/v56_kuni.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v56_kuni: v54_famat (below)", """# v61a_presplit: v56_kuni (below) with, at D = 128, the state's fp16 pieces for chunk c+1's Q S0 made right after
# chunk c's update, before the CTA barrier the consumers waited at (the Vt^T fragments after Q S0).
# v56_kuni: v54_famat (below)""")
# the pieces and their row scales live across the barrier
sub("""  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + W::VB + (ch % W::NBUF) * W::VBUF;""", """  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  // S^T's rows scaled and split in fp16 pieces for the next chunk's Q S0, made before the CTA barrier (v61).
  uint32_t ph[8][4], pl[8][4];
  float pinv0 = 1.f, pinv1 = 1.f;
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + W::VB + (ch % W::NBUF) * W::VBUF;""")
old_qs0 = src[src.index("        float m0 = 0.f, m1 = 0.f;\n#pragma unroll\n        for (int i = 0; i < 16; ++i) {\n          m0 = fmaxf(m0, fmaxf(fabsf(S[i][0])"):
              src.index("        const float* rq = sm + W::RQ + nb * C;\n#pragma unroll\n        for (int nt = 0; nt < 4; ++nt) {\n          const float2 r = *reinterpret_cast<const float2*>(rq + 8 * nt + 2 * tig);\n          O[nt][0] *= inv0 * r.x;")]
assert "wh_mma_n32(O, al[u], dh);" in old_qs0 and old_qs0.count("wg_wait0();") == 1
sub(old_qs0, """#pragma unroll
        for (int qb = 0; qb < 2; ++qb) {  // two groups of 12, as v56 (one group of 24 spilled 216 bytes)
          wg_keep(O);
          wg_keep(ph);
          wg_keep(pl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int kk = 4 * qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);
            const uint64_t dl = wg_desc(reinterpret_cast<const float*>(ql) + 64 * kk, 128, 2048);
            wh_mma_n32(O, pl[kk], dh);
            wh_mma_n32(O, ph[kk], dl);
            wh_mma_n32(O, ph[kk], dh);
          }
          wg_commit();
          wg_wait0();
          wg_keep(O);
          wg_keep(ph);
          wg_keep(pl);
        }
""")
sub("""          O[nt][0] *= inv0 * r.x;
          O[nt][1] *= inv0 * r.y;
          O[nt][2] *= inv1 * r.x;
          O[nt][3] *= inv1 * r.y;""", """          O[nt][0] *= pinv0 * r.x;
          O[nt][1] *= pinv0 * r.y;
          O[nt][2] *= pinv1 * r.x;
          O[nt][3] *= pinv1 * r.y;""")
_k = src.index("gd_wsh_kernel(const float*")
_end = "    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared\n  }\n}\n"
_i = src.index(_end, _k)
src = src[:_i] + """    {  // the next chunk's pieces: S^T's rows under a power-of-two scale each (unconditional, so the compiler sees
       // the pieces dead from Q S0 to here; guarded, they stayed live over K^T Vt and spilled)
      float m0 = 0.f, m1 = 0.f;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        m0 = fmaxf(m0, fmaxf(fabsf(S[i][0]), fabsf(S[i][1])));
        m1 = fmaxf(m1, fmaxf(fabsf(S[i][2]), fabsf(S[i][3])));
      }
      m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
      m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
      m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
      m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
      float s0, s1;
      pow2_scale(m0, s0, pinv0);
      pow2_scale(m1, s1, pinv1);
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, ph[kk][0], pl[kk][0]);
        split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, ph[kk][1], pl[kk][1]);
        split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, ph[kk][2], pl[kk][2]);
        split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ph[kk][3], pl[kk][3]);
      }
    }
    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}
""" + src[_i + len(_end):]
# the Vt^T fragments (32 registers) after Q S0, whose pieces now hold 64: both before it spilled 252 bytes
_k = src.index("gd_wsh_kernel(const float*")
_vt = "      wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);\n"
_gy = "      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores\n"
_i = src.index(_vt, _k)
src = src[:_i] + src[_i + len(_vt):]
_j = src.index(_gy, _k)
src = src[:_j] + _vt.replace("      wsg", "      wsg") + src[_j:]
src = src.replace('name="sgd_v56_kuni"', 'name="sgd_v61a_presplit"').replace("sgd_v56_forward", "sgd_v61a_forward")
(ROOT / ".gpu/v61a_presplit.py").write_text(src)
print("wrote .gpu/v61a_presplit.py")
