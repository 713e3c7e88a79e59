"""Write .gpu/v69_sacc.py from .gpu/v68c_both.py (make_v68.py; session 28).

The consumers' state lives in K^T Vt's accumulator. v64-v68 zero 64 accumulator registers, run K^T Vt into them,
wait, and update S = G_C (S + f acc) with an FFMA and an FMUL an element (f = 2^e_f: the Vt'' row scale times the
K'' chunk scale). v69 keeps, per state row, R with S = lam 2^le R (lam a float, G_C of the last chunk; le an
integer exponent, so no product of chunk scales can leave the float range): before K^T Vt, R' = R lam 2^(le - e_f)
= S / f (one FMUL an element), then the tensor core adds Vt''^T K'' into R' in place, and the new state is
G_C 2^e_f R': lam = G_C, le = e_f, no arithmetic. Q S0's split scales R by lam s (s S's power-of-two scale), so
the pieces are S's. A row whose state is 2^100 times its increments' scale or more keeps R' at ~2^100 and drops the
chunk's increment (its Vt'' rows zeroed for K^T Vt): the dropped part is below 2^-60 of the row. The safe path
turns R back into S (S = lam 2^le R, two FMULs) and restarts lam = 1, le = 0.

What it buys: 64 fewer accumulator registers, so K^T Vt is issued right after Q S0's wait and runs beside the
combine and y's stores (they no longer wait for it), and ~96 fewer instructions a consumer thread a chunk (the
FFMAs and the accumulators' zeroing). Not bitwise v68c: the prescale rounds once where v68c's FFMA did, and the
tensor core's fp32 accumulation adds the increment into the state (v68c added it with an FFMA)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v68c_both.py").read_text()


def sub(old, new, count=1, text=None):
    global src
    t = src if text is None else text
    assert t.count(old) == count, (old[:300], t.count(old))
    t = t.replace(old, new)
    if text is None:
        src = t
    return t


sub("# v68c_both: v67_iter (below)", "# v69_sacc: v68c_both (below) with the consumers' state kept in K^T Vt's accumulator, "
    "K^T Vt issued before y's stores.\n# v68c_both: v67_iter (below)")
sub("""__device__ __forceinline__ void split_h2(float x0, float x1, uint32_t& hi, uint32_t& lo) {""",
    """// x 2^k for a positive normal x: 0 below the normal range, the exponent held at 2^127's above it.
__device__ __forceinline__ float ldexp_sat(float x, int k) {
  const int e = (int)(__float_as_uint(x) >> 23) + k;
  return e <= 0 ? 0.f : __uint_as_float((__float_as_uint(x) & 0x007fffffu) | ((uint32_t)min(e, 254) << 23));
}
// floor(log2 x) for x >= 0 normal (-127 for 0).
__device__ __forceinline__ int exp_of(float x) { return (int)(__float_as_uint(x) >> 23) - 127; }

__device__ __forceinline__ void split_h2(float x0, float x1, uint32_t& hi, uint32_t& lo) {""")

start = src.index("  // ---- consumers: warpgroup w owns S^T rows 64 w .. 64 w + 63; this warp rows j0 and j0 + 8.\n"
                  "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" ::\"n\"(W::REG_C));")
end = src.index("// A (B, T, H, 128) fp32 tensor as TMA boxes")
body = src[start:end]

body = sub("""  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;""", "R_DECL", text=body)
# every S[n] of v68c's consumer code addresses block n >> 3, tile n & 7
body = re.sub(r"\bS\[([^\[\]]+)\]", r"S[(\1) >> 3][(\1) & 7]", body)
body = body.replace("R_DECL", """  float S[2][8][4];  // R by column block (K^T Vt's accumulators)
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) S[a][n][e] = 0.f;
  float lam0 = 1.f, lam1 = 1.f;  // rows j0, j0 + 8: S = lam 2^le R, R held in S[][][]
  int le0 = 0, le1 = 0;""")
body = body.replace("  // S^T in the wgmma accumulator layout: S[(n) >> 3][(n) & 7] holds", "  // R in the wgmma accumulator layout: tile n (S[n >> 3][n & 7]) holds")

# Q S0's scale from S = lam 2^le R
body = sub("""        float s0, inv0, s1, inv1;
        pow2_scale(m0, s0, inv0);
        pow2_scale(m1, s1, inv1);""", """        m0 *= lam0;  // the row's largest |S| / 2^le
        m1 *= lam1;
        mr0 = m0;
        mr1 = m1;
        float s0, inv0, s1, inv1;
        pow2_scale(m0, s0, inv0);
        pow2_scale(m1, s1, inv1);
        s0 *= lam0;  // R lam s = S (s 2^-le): S's pieces
        s1 *= lam1;
        inv0 = ldexp_sat(inv0, le0);  // 1 / (S's scale)
        inv1 = ldexp_sat(inv1, le1);""", text=body)
body = sub("""      if (ch > 0) {  // chunk 0: S is zero
        const uint64_t bqh""", """      float mr0 = 0.f, mr1 = 0.f;  // the rows' largest |S| / 2^le (chunk 0: S is zero)
      if (ch > 0) {  // chunk 0: S is zero
        const uint64_t bqh""", text=body)

# K^T Vt: out of its place after y's stores ...
i0 = body.index("      // ---- S^T = G_C (S^T + Vt''^T K''): Vt''^T's pieces (the chunk's top) x K''s")
i1 = body.index("      WSH_MARK(7, ch);\n") + len("      WSH_MARK(7, ch);\n")
old_kt = body[i0:i1]
assert "fmaf(acc[a][kk][0], f0" in old_kt, old_kt[-800:]
body = body[:i0] + """      wg_wait0();  // K^T Vt, issued before y's stores
      wg_keep(S[0]);
      wg_keep(S[1]);
      WSH_MARK(6, ch);
      lam0 = GC;
      lam1 = GC;
      le0 -= d0;
      le1 -= d1;
      WSH_MARK(7, ch);
""" + body[i1:]
# ... into the gap after the combine, before y's stores
body = sub("""      WSH_MARK(2, ch);
      WSH_MARK(3, ch);""", """      WSH_MARK(2, ch);
      // ---- S^T = G_C (S^T + Vt''^T K'') in place: R' = R lam 2^(le - e_f) = S / f (f = 2^e_f: Vt'''s row scale
      // times K'''s chunk scale), R' += Vt''^T K'' (2 k steps x 2 column blocks x 3 wgmma m64n64k16), then S = G_C f R'.
      // A row whose R' would pass 2^100 keeps R' there and drops the chunk's increment (its Vt'' rows zeroed here;
      // A Vt, which read them, is done): the increment is below 2^-60 of the row.
      const bool last = ch + 1 == nchunks;
      const float GC = gsc[C - 1];
      int d0 = 0, d1 = 0;
      if (!last) {
        const int ek = exp_of(sm[W::RK + nb * DP]);
        d0 = le0 - (exp_of(iv0) + ek);
        d1 = le1 - (exp_of(iv1) + ek);
        const int em0 = exp_of(mr0), em1 = exp_of(mr1);
        const bool drop0 = mr0 > 0.f && em0 + d0 > 100, drop1 = mr1 > 0.f && em1 + d1 > 100;
        if (drop0) d0 = 100 - em0;
        if (drop1) d1 = 100 - em1;
        const float g0 = ldexp_sat(lam0, d0), g1 = ldexp_sat(lam1, d1);
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
          for (int kk = 0; kk < 8; ++kk) {
            S[a][kk][0] *= g0;
            S[a][kk][1] *= g0;
            S[a][kk][2] *= g1;
            S[a][kk][3] *= g1;
          }
#pragma unroll
        for (int m = 0; m < 2; ++m) {  // Vt'' rows: registers 0, 2 row j0, 1, 3 row j0 + 8
          wh[m][0] = drop0 ? 0u : wh[m][0];
          wl[m][0] = drop0 ? 0u : wl[m][0];
          wh[m][2] = drop0 ? 0u : wh[m][2];
          wl[m][2] = drop0 ? 0u : wl[m][2];
          wh[m][1] = drop1 ? 0u : wh[m][1];
          wl[m][1] = drop1 ? 0u : wl[m][1];
          wh[m][3] = drop1 ? 0u : wh[m][3];
          wl[m][3] = drop1 ? 0u : wl[m][3];
        }
        const uint64_t bkh = wg_desc(sm + W::KH + nb * W::H16, 128, 512);
        const uint64_t bkl = wg_desc(sm + W::KL + nb * W::H16, 128, 512);
        wg_keep(S[0]);
        wg_keep(S[1]);
        wg_keep(wh);
        wg_keep(wl);
        wg_fence();
#pragma unroll
        for (int m = 0; m < 2; ++m) {
#pragma unroll
          for (int a = 0; a < 2; ++a) {  // columns 64 a ..: 2048 halves a block; steps 16 m ..: 128 halves a step
            const uint64_t dh = wg_desc_at(bkh, 1024 * a + 64 * m), dl = wg_desc_at(bkl, 1024 * a + 64 * m);
            wh_mma_n64(S[a], wl[m], dh);
            wh_mma_n64(S[a], wh[m], dl);
            wh_mma_n64(S[a], wh[m], dh);
          }
        }
        wg_commit();
      }
      WSH_MARK(3, ch);""", text=body)
body = sub("""      if (ch + 1 == nchunks) {
        cta_sync();
        break;  // the last chunk: no state after it
      }""", """      if (last) {
        cta_sync();
        break;  // the last chunk: no state after it
      }""", text=body)
# the safe path runs on S itself
body = sub("""      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits).
""", """      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits), on S
      // itself: S = lam 2^le R (the exponent in two halves, each within the float range), then lam = 1, le = 0.
      {
        const float a0 = ldexp_sat(lam0, le0 / 2), b0 = ldexp_sat(1.f, le0 - le0 / 2);
        const float a1 = ldexp_sat(lam1, le1 / 2), b1 = ldexp_sat(1.f, le1 - le1 / 2);
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
          for (int kk = 0; kk < 8; ++kk) {
            S[a][kk][0] = S[a][kk][0] * a0 * b0;
            S[a][kk][1] = S[a][kk][1] * a0 * b0;
            S[a][kk][2] = S[a][kk][2] * a1 * b1;
            S[a][kk][3] = S[a][kk][3] * a1 * b1;
          }
        lam0 = lam1 = 1.f;
        le0 = le1 = 0;
      }
""", text=body)
src = src[:start] + body + src[end:]
src = src.replace('name="sgd_v68c_both"', 'name="sgd_v69_sacc"').replace("sgd_v68c_forward", "sgd_v69_forward")
(ROOT / ".gpu/v69_sacc.py").write_text(src)
print("wrote v69_sacc")
