"""Write candidates/scalar_gated_delta/v47a_avt_first.py and v47b_avt_free.py from v43_wsg.py (session 22). The A Vt product (Vt^T A^T on
mma.sync, a chain of up to 12 dependent mma a column tile) ran after Q S0's last wgmma wait, and the y stores
waited for it. Here it goes into its own accumulators P, issued right after the Vt^T fragments and before Q S0, so
its chain runs under Q S0's wgmma; O += P after Q S0's last wait. The Vt^T fragments come first at D = 64 too,
which needs v39a's register split there (152 / 120 by setmaxnreg). Sums in another order: not bitwise v43's.
v47b_avt_free writes the same as plain asm, which the compiler may schedule among Q S0's code. (Separate accumulators
for the split terms, chains 4 or 8 mma deep, spilled 224 / 116 bytes at D = 128 under the pinned order.)"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

AVT_P = """      wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      // Vt^T A^T on mma.sync into P before Q S0: its dependent chain runs under Q S0's wgmma (volatile: issued here).
      float P[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) P[nt][e] = 0.f;
      {
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
            mma3v(P[nt], vh[ks], vl[ks], bh0, bh1, bl0, bl1);
          }
        }
      }
"""

MMA3V = """// mma3 as volatile asm, so the compiler keeps it where it is issued (ahead of the wgmma that follow).
__device__ __forceinline__ void mma8v(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma3v(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4], uint32_t bh0,
                                      uint32_t bh1, uint32_t bl0, uint32_t bl1) {
  mma8v(c, al, bh0, bh1);
  mma8v(c, ah, bl0, bl1);
  mma8v(c, ah, bh0, bh1);
}

"""


def sub(src, old, new):
    assert src.count(old) == 1, (old[:120], src.count(old))
    return src.replace(old, new)


def make(stem, what, pinned=True):
    src = (P / "v43_wsg.py").read_text()
    src = sub(src, "  static constexpr int REG_C = DP == 128 ? 168 : 0;", "  static constexpr int REG_C = DP == 128 ? 168 : 152;")
    src = sub(src, "  static constexpr int REG_P = DP == 128 ? 88 : 0;", "  static constexpr int REG_P = DP == 128 ? 88 : 120;")
    src = sub(src, "// c += a*b in split precision: small terms first, then hi*hi.\n",
              MMA3V + "// c += a*b in split precision: small terms first, then hi*hi.\n")
    avt = AVT_P
    if not pinned:  # plain asm: the compiler may schedule the mma.sync among the wgmma code
        avt = avt.replace("mma3v(P[nt]", "mma3(P[nt]").replace(" (volatile: issued here)", "")
    src = sub(src, "      if constexpr (W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);\n", avt)
    src = sub(src, """      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      // + Vt^T A^T, mma.sync
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
""", """#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] += """ + "P[nt][e]" + """;  // + Vt^T A^T
""")
    tag = stem.split("_")[0]
    src = src.replace("sgd_v43_forward", f"sgd_{tag}_forward").replace('name="sgd_v43_wsg",', f'name="sgd_{stem}",')
    src = f"# {stem}: v43_wsg (below) with {what}.\n" + src
    assert "P[nt][e] += " not in src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


make("v47a_avt_first", "A Vt (mma.sync) into its own accumulators, issued before Q S0 at both D (Vt^T fragments first\n# at D = 64 too, registers 152 / 120 there)")
make("v47b_avt_free", "v47a's change (A Vt into its own accumulators, Vt^T fragments first) written before Q S0 as\n# plain asm, so the compiler may schedule the mma.sync among Q S0's code", pinned=False)
