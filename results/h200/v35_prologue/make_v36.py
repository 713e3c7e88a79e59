"""Write candidates/scalar_gated_delta/v36_prep_avt.py from v35b_prologue_tail.py (make_v35.py): at D = 64 the prep
warps also compute chunk c+1's A Vt (state-independent) into shared memory while the consumers run chunk c, and the
consumers add it to Q S0 instead of running A Vt's mma.sync chain themselves. D = 128 is v35b's. Also drops the dead
YST staging branch (v29b's knob)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

SUBS = [
    # config: drop YST, add the A Vt buffer at DP = 64
    ("""  static constexpr bool YST = false;                 // y staged in shared memory, stored as float4 rows
  static constexpr int YSS = DP + 4;                 // its row stride
""", """  // DP = 64: the prep warps build chunk c+1's (A Vt)^T [j][t] (row stride PT: conflict-free float2 writes and reads)
  static constexpr bool PAV = DP == 64;
  static constexpr int PT = C + 8;
"""),
    ("""  static constexpr int YS = SF + 4;                  // y(c) rows [t][YSS] when YST
  static constexpr int TOTAL = YS + (YST ? C * YSS : 0);
""", """  static constexpr int PB = SF + 4;                  // (A Vt)^T, 2 chunks, when PAV
  static constexpr int TOTAL = PB + (PAV ? 2 * DP * PT : 0);
"""),
    ("""  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0, "16-byte aligned");
""", """  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0 && PB % 4 == 0, "16-byte aligned");
"""),
    # prep: A tiles, then (PAV) A Vt on 8 warps
    ("""  if (safe || pw >= 6) return;
  wsg_atile<DP>(sm, c, pw, gid, tig);
}
""", """  if (safe) return;
  if (pw < 6) wsg_atile<DP>(sm, c, pw, gid, tig);
  if constexpr (W::PAV) {
    prep_sync<NP>();  // chunk c's A tiles visible to every prep warp
    if (pw < 8) wsg_pav<DP>(sm, c, pw, gid, tig);
  }
}
"""),
    ("""// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible:""",
     """// (A Vt)^T of chunk c at DP = 64, the consumers' mma.sync code on prep warp w (0..7): rows j of m-tile w / 2, the
// n-tiles (t) {0, 3} or {1, 2} (five causal k steps each), into PB[c & 1] as [j][t].
template <int DP>
__device__ __forceinline__ void wsg_pav(float* sm, int c, int w, int gid, int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, CS = W::CS, NCS = W::NCS, PT = W::PT;
  const int nb = c & 1;
  const float* vsm = sm + (c % 3) * W::BUF + W::VR;
  const float* cfs = sm + W::CF + nb * C;
  const float* am = sm + W::AM + nb * C * CS;
  const int j0 = 16 * (w >> 1) + gid;
  const int nt0 = (w & 1) ? 1 : 0, nt1 = (w & 1) ? 2 : 3;
  float p[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    // this k step's Vt^T fragment only: the prep path has no registers for all four
    const int s0 = 8 * ks + tig;
    const float ca = cfs[s0];
    const float cb = cfs[s0 + 4];
    uint32_t vh[4], vl[4];
    split(vsm[s0 * NCS + j0] * ca, vh[0], vl[0]);
    split(vsm[s0 * NCS + j0 + 8] * ca, vh[1], vl[1]);
    split(vsm[(s0 + 4) * NCS + j0] * cb, vh[2], vl[2]);
    split(vsm[(s0 + 4) * NCS + j0 + 8] * cb, vh[3], vl[3]);
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int nt = u ? nt1 : nt0;
      if (nt < ks) continue;
      const int ta = (8 * nt + gid) * CS + 8 * ks + tig;
      uint32_t bh0, bl0, bh1, bl1;
      split(am[ta], bh0, bl0);
      split(am[ta + 4], bh1, bl1);
      mma3(p[u], vh, vl, bh0, bh1, bl0, bl1);
    }
  }
  float* pb = sm + W::PB + nb * DP * PT;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int t = 8 * (u ? nt1 : nt0) + 2 * tig;
    *reinterpret_cast<float2*>(pb + j0 * PT + t) = make_float2(p[u][0], p[u][1]);
    *reinterpret_cast<float2*>(pb + (j0 + 8) * PT + t) = make_float2(p[u][2], p[u][3]);
  }
}

// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible:"""),
    # consumers: A Vt from the prep warps at DP = 64
    ("""      // + Vt^T A^T, mma.sync
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
""", """      // + Vt^T A^T on mma.sync (DP = 128; at DP = 64 the prep warps built it, added above), then y
      if constexpr (!W::PAV) {
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
        store_y();
      }
"""),
]

Y_LAMBDA = """      // y(c) = G_t O^T, rows t < n, from registers, once A Vt is in O.
      auto store_y = [&]() {
BODY
      };
"""
PAV_ADD = """      if constexpr (W::PAV) {  // + Vt^T A^T, built by the prep warps; y before the Vt fragments take registers
        const float* pb = sm + W::PB + nb * DP * W::PT;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int t = 8 * nt + 2 * tig;
          const float2 p0 = *reinterpret_cast<const float2*>(pb + j0 * W::PT + t);
          const float2 p1 = *reinterpret_cast<const float2*>(pb + (j0 + 8) * W::PT + t);
          O[nt][0] += p0.x;
          O[nt][1] += p0.y;
          O[nt][2] += p1.x;
          O[nt][3] += p1.y;
        }
        store_y();
      }
"""


def main():
    src = (P / "v35b_prologue_tail.py").read_text()
    for old, new in SUBS:
        assert src.count(old) == 1, old[:100]
        src = src.replace(old, new)
    # the dead YST branch of the y stores
    i = src.index("      // y(c) = G_t O^T, rows t < n: from registers, or (YST)")
    j = src.index("      } else {\n", i)
    k = src.index("      // ---- S^T = G_C (S^T + Vt^T K)", j)
    body = src[j + len("      } else {\n"):k]
    assert body.rstrip().endswith("}") and body.count("\n") > 10
    body = body.rstrip()[:-1]  # the else's closing brace
    body = "".join(line[2:] if line.startswith("  ") else line for line in body.splitlines(True))
    src = src[:i] + src[k:]
    body = "".join("  " + line if line.strip() and not line.startswith("#") else line for line in body.rstrip().splitlines(True))
    vt = "      // Vt^T fragments (A operand, rows j, k = s) for every s step, split.\n      const float* cfs = sm + W::CF"
    assert src.count(vt) == 1
    src = src.replace(vt, Y_LAMBDA.replace("BODY", body.rstrip()) + PAV_ADD + vt)
    assert "YST" not in src and "YSS" not in src
    src = src.replace("sgd_v35b_forward", "sgd_v36_forward").replace('name="sgd_v35b_prologue_tail",', 'name="sgd_v36_prep_avt",')
    first = src.index("\n") + 1
    src = ("# v36_prep_avt: v29a_wsg (below) with chunk 0 loaded by the consumer warps beside chunk 1, no state update\n"
           "# after the last chunk (v35b), and chunk c+1's A Vt built by the prep warps at D = 64.\n" + src[first:])
    (P / "v36_prep_avt.py").write_text(src)
    print("wrote", P / "v36_prep_avt.py")


main()
