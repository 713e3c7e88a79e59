"""Write .gpu/v65_pstate.py from .gpu/v64_avt.py (make_v64.py; session 27). The consumers' update multiplies every
state element by the chunk's gate product G_C (an FMUL beside the FFMA, 64 a thread a chunk). v65 keeps the state
as S' = S / P with P the running product of G_C (one scalar a thread): S'_{c+1} = S'_c + acc f / P, P <- G_C P, and
P goes into Q S0's unscaling; when P falls below 2^-40 the state takes it back (S' <- P S', P <- 1), and the safe
path does so before its plain recurrence. About 50 fewer instructions a consumer thread a chunk (~400 warp
instructions of ~15,000)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v64_avt.py").read_text()


def ksub(old, new):
    """Replace once inside gd_wsh_kernel."""
    global src
    k = src.index("gd_wsh_kernel(const __grid_constant__")
    assert src.count(old, k, k + 30000) == 1, (old[:200], src.count(old, k, k + 30000))
    i = src.index(old, k)
    src = src[:i] + new + src[i + len(old):]


src = src.replace("# v64_avt: v63b_tma (below)", """# v65_pstate: v64_avt (below) with the state kept as S / P, P the running product of the chunks' gate products.
# v64_avt: v63b_tma (below)""", 1)
ksub("""    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  cta_sync();""", """    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  float P = 1.f;  // the state is P S (v65): the update adds acc f / P and leaves G_C in P
  cta_sync();""")
ksub("""          O[nt][0] = fmaf(P[nt][0], iv0 * p.x, O[nt][0] * (inv0 * r.x) * gy[nt][0]);
          O[nt][1] = fmaf(P[nt][1], iv0 * p.y, O[nt][1] * (inv0 * r.y) * gy[nt][1]);
          O[nt][2] = fmaf(P[nt][2], iv1 * p.x, O[nt][2] * (inv1 * r.x) * gy[nt][0]);
          O[nt][3] = fmaf(P[nt][3], iv1 * p.y, O[nt][3] * (inv1 * r.y) * gy[nt][1]);""",
     """          O[nt][0] = fmaf(AV[nt][0], iv0 * p.x, O[nt][0] * (inv0 * r.x) * (P * gy[nt][0]));
          O[nt][1] = fmaf(AV[nt][1], iv0 * p.y, O[nt][1] * (inv0 * r.y) * (P * gy[nt][1]));
          O[nt][2] = fmaf(AV[nt][2], iv1 * p.x, O[nt][2] * (inv1 * r.x) * (P * gy[nt][0]));
          O[nt][3] = fmaf(AV[nt][3], iv1 * p.y, O[nt][3] * (inv1 * r.y) * (P * gy[nt][1]));""")
# the A Vt accumulator was called P in v64: rename it AV inside the kernel
k = src.index("gd_wsh_kernel(const __grid_constant__")
e = src.index("void launch_wsh(", k)
body = src[k:e]
for old, new in [("float P[4][4];", "float AV[4][4];"), ("wsh_zero(P);", "wsh_zero(AV);"), ("wg_keep(P);", "wg_keep(AV);"),
                 ("wsh_avt(P, wh, wl, aph, apl);", "wsh_avt(AV, wh, wl, aph, apl);"),
                 ("O[nt][0] = P[nt][0] * (iv0 * p.x);", "O[nt][0] = AV[nt][0] * (iv0 * p.x);"),
                 ("O[nt][1] = P[nt][1] * (iv0 * p.y);", "O[nt][1] = AV[nt][1] * (iv0 * p.y);"),
                 ("O[nt][2] = P[nt][2] * (iv1 * p.x);", "O[nt][2] = AV[nt][2] * (iv1 * p.x);"),
                 ("O[nt][3] = P[nt][3] * (iv1 * p.y);", "O[nt][3] = AV[nt][3] * (iv1 * p.y);")]:
    assert old in body, old
    body = body.replace(old, new)
assert "P[" not in body.replace("AV[", ""), "a P[ left"
src = src[:k] + body + src[e:]
ksub("""      const float f0 = iv0 * rkc, f1 = iv1 * rkc;  // powers of two: exact
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          float* sv = S[8 * a + kk];
          sv[0] = fmaf(acc[a][kk][0], f0, sv[0]) * GC;
          sv[1] = fmaf(acc[a][kk][1], f0, sv[1]) * GC;
          sv[2] = fmaf(acc[a][kk][2], f1, sv[2]) * GC;
          sv[3] = fmaf(acc[a][kk][3], f1, sv[3]) * GC;
        }
""", """      const float rp = 1.f / P;
      const float f0 = iv0 * rkc * rp, f1 = iv1 * rkc * rp;
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          float* sv = S[8 * a + kk];
          sv[0] = fmaf(acc[a][kk][0], f0, sv[0]);
          sv[1] = fmaf(acc[a][kk][1], f0, sv[1]);
          sv[2] = fmaf(acc[a][kk][2], f1, sv[2]);
          sv[3] = fmaf(acc[a][kk][3], f1, sv[3]);
        }
      P *= GC;
      if (P < 0x1p-40f) {  // the state takes P back before 1 / P nears fp32's range (G_C >= 1e-18 here)
#pragma unroll
        for (int i = 0; i < 16; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) S[i][e] *= P;
        P = 1.f;
      }
""")
ksub("""      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits).
""", """      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits).
      if (P != 1.f) {  // the state itself first
#pragma unroll
        for (int i = 0; i < 16; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) S[i][e] *= P;
        P = 1.f;
      }
""")
src = src.replace('name="sgd_v64_avt"', 'name="sgd_v65_pstate"').replace("sgd_v64_forward", "sgd_v65_forward")
(ROOT / ".gpu/v65_pstate.py").write_text(src)
print("wrote .gpu/v65_pstate.py")
