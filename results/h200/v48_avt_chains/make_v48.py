"""Write candidates/scalar_gated_delta/v48a_avt_lo.py and v48b_avt_terms.py from v43_wsg.py (session 22). probe47
read v43's A Vt issue plus the y stores (which wait for its results) at ~1,770 cycles of a 3,690-cycle medium chunk
and ~2,800 of 8,470 at large, for 30 mma.sync a warp: the chain (up to 12 dependent mma into one O tile) is slow,
not the issue. In place (after Q S0's last wait, where the registers are free), v48a keeps hi*hi in O and sums
the two small terms in a second accumulator (chains 4 and 8 deep); v48b gives each small term its own (4 deep).
Sums in another order: not bitwise v43's."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

OLD = """      const float* am = sm + W::AM + nb * C * CS;
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
"""


def new_avt(na):
    lo = "PL[1][nt]" if na == 2 else "PL[0][nt]"
    return f"""      const float* am = sm + W::AM + nb * C * CS;
      float PL[{na}][4][4];  // the small split terms, apart from hi*hi in O: shorter dependent chains
#pragma unroll
      for (int p = 0; p < {na}; ++p)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) PL[p][nt][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {{
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {{
          if (nt < ks) continue;
          const int ta = (8 * nt + gid) * CS + 8 * ks + tig;
          uint32_t bh0, bl0, bh1, bl1;
          split(am[ta], bh0, bl0);
          split(am[ta + 4], bh1, bl1);
          mma8(PL[0][nt], vl[ks], bh0, bh1);
          mma8({lo}, vh[ks], bl0, bl1);
          mma8(O[nt], vh[ks], bh0, bh1);
        }}
      }}
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] += {"PL[0][nt][e] + PL[1][nt][e]" if na == 2 else "PL[0][nt][e]"};
"""


def make(stem, na, what):
    src = (P / "v43_wsg.py").read_text()
    assert src.count(OLD) == 1
    src = src.replace(OLD, new_avt(na))
    tag = stem.split("_")[0]
    src = src.replace("sgd_v43_forward", f"sgd_{tag}_forward").replace('name="sgd_v43_wsg",', f'name="sgd_{stem}",')
    src = f"# {stem}: v43_wsg (below) with {what}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


make("v48a_avt_lo", 1, "A Vt's two small split terms summed apart from hi*hi (dependent chains 4 and 8 mma deep\n# instead of 12)")
make("v48b_avt_terms", 2, "each of A Vt's three split terms in its own accumulator (dependent chains 4 mma deep\n# instead of 12)")
