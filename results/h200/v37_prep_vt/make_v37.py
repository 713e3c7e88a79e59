"""Write candidates/scalar_gated_delta/v37_prep_vt.py from v29a_wsg.py: at D = 64 the five prep warps that build no
A tile (they wait during the tiles) split chunk c+1's Vt^T fragments into shared memory, laid out in the consumers'
fragment order, and the consumers read them (8 conflict-free 16-byte loads a thread) instead of building them
(24 loads, 16 multiplies, 16 splits). Same arithmetic: outputs bitwise v29a's. D = 128 is v29a's."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

SUBS = [
    ("""  static constexpr bool YST = false;                 // y staged in shared memory, stored as float4 rows
  static constexpr int YSS = DP + 4;                 // its row stride
""", """  // DP = 64: the prep warps split chunk c+1's Vt^T fragments (hi, lo) in the consumers' fragment order
  static constexpr bool VTP = DP == 64;
  static constexpr int VTN = NCW * 4 * 32 * 4;       // words a chunk: warps x k steps x lanes x 4
"""),
    ("""  static constexpr int YS = SF + 4;                  // y(c) rows [t][YSS] when YST
  static constexpr int TOTAL = YS + (YST ? C * YSS : 0);
""", """  static constexpr int VT = SF + 4;                  // Vt^T hi then lo, 2 chunks, when VTP
  static constexpr int TOTAL = VT + (VTP ? 2 * 2 * VTN : 0);
"""),
    ("""  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0, "16-byte aligned");
""", """  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0 && VT % 4 == 0, "16-byte aligned");
"""),
    ("""  if (safe || pw >= 6) return;
  wsg_atile<DP>(sm, c, pw, gid, tig);
}
""", """  if (safe) return;
  if (pw < 6) {
    wsg_atile<DP>(sm, c, pw, gid, tig);
  } else if constexpr (W::VTP) {
    // Vt^T fragments of chunk c, slot (consumer warp cw, k step ks, lane) as the consumers' code builds them
    const float* vsm = buf + W::VR;
    const float* cfs = sm + W::CF + nb * C;
    uint32_t* vt = reinterpret_cast<uint32_t*>(sm + W::VT + nb * 2 * W::VTN);
    for (int slot = ptid - 32 * 6; slot < W::VTN / 4; slot += W::NP - 32 * 6) {
      const int sl = slot & 31, ks = (slot >> 5) & 3, cw = slot >> 7;
      const int j0 = 16 * cw + (sl >> 2), s0 = 8 * ks + (sl & 3);
      const float ca = cfs[s0];
      const float cb = cfs[s0 + 4];
      uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
      split(vsm[s0 * W::NCS + j0] * ca, h0, l0);
      split(vsm[s0 * W::NCS + j0 + 8] * ca, h1, l1);
      split(vsm[(s0 + 4) * W::NCS + j0] * cb, h2, l2);
      split(vsm[(s0 + 4) * W::NCS + j0 + 8] * cb, h3, l3);
      *reinterpret_cast<uint4*>(vt + 4 * slot) = make_uint4(h0, h1, h2, h3);
      *reinterpret_cast<uint4*>(vt + W::VTN + 4 * slot) = make_uint4(l0, l1, l2, l3);
    }
  }
}
"""),
    ("""      // Vt^T fragments (A operand, rows j, k = s) for every s step, split.
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int s0 = 8 * ks + tig;
        const float ca = cfs[s0];
        const float cb = cfs[s0 + 4];
        split(vsm[s0 * NCS + j0] * ca, vh[ks][0], vl[ks][0]);
        split(vsm[s0 * NCS + j0 + 8] * ca, vh[ks][1], vl[ks][1]);
        split(vsm[(s0 + 4) * NCS + j0] * cb, vh[ks][2], vl[ks][2]);
        split(vsm[(s0 + 4) * NCS + j0 + 8] * cb, vh[ks][3], vl[ks][3]);
      }
""", """      // Vt^T fragments (A operand, rows j, k = s) for every s step, split (DP = 64: by the prep warps).
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      if constexpr (W::VTP) {
        const uint32_t* vt = reinterpret_cast<const uint32_t*>(sm + W::VT + nb * 2 * W::VTN);
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          const int slot = (warp * 4 + ks) * 32 + lane;
          const uint4 hv = *reinterpret_cast<const uint4*>(vt + 4 * slot);
          const uint4 lv = *reinterpret_cast<const uint4*>(vt + W::VTN + 4 * slot);
          vh[ks][0] = hv.x;
          vh[ks][1] = hv.y;
          vh[ks][2] = hv.z;
          vh[ks][3] = hv.w;
          vl[ks][0] = lv.x;
          vl[ks][1] = lv.y;
          vl[ks][2] = lv.z;
          vl[ks][3] = lv.w;
        }
      } else {
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          const int s0 = 8 * ks + tig;
          const float ca = cfs[s0];
          const float cb = cfs[s0 + 4];
          split(vsm[s0 * NCS + j0] * ca, vh[ks][0], vl[ks][0]);
          split(vsm[s0 * NCS + j0 + 8] * ca, vh[ks][1], vl[ks][1]);
          split(vsm[(s0 + 4) * NCS + j0] * cb, vh[ks][2], vl[ks][2]);
          split(vsm[(s0 + 4) * NCS + j0 + 8] * cb, vh[ks][3], vl[ks][3]);
        }
      }
"""),
]


def main():
    src = (P / "v29a_wsg.py").read_text()
    for old, new in SUBS:
        assert src.count(old) == 1, old[:100]
        src = src.replace(old, new)
    # the dead YST branch of the y stores
    i = src.index("      // y(c) = G_t O^T, rows t < n: from registers, or (YST)")
    j = src.index("      } else {\n", i)
    k = src.index("      // ---- S^T = G_C (S^T + Vt^T K)", j)
    body = src[j + len("      } else {\n"):k]
    body = body.rstrip()[:-1]  # the else's closing brace
    body = "".join(line[2:] if line.startswith("  ") else line for line in body.splitlines(True))
    src = src[:i] + "      // y(c) = G_t O^T, rows t < n, from registers.\n" + body.rstrip() + "\n" + src[k:]
    assert "YST" not in src and "YSS" not in src
    src = src.replace("sgd_v29a_forward", "sgd_v37_forward").replace('name="sgd_v29a_wsg",', 'name="sgd_v37_prep_vt",')
    src = ("# v37_prep_vt: v29a_wsg (below) with chunk c+1's Vt^T fragments split at D = 64 by the five prep warps that\n"
           "# build no A tile, and v29b's dead staging branch dropped.\n" + src)
    (P / "v37_prep_vt.py").write_text(src)
    print("wrote", P / "v37_prep_vt.py")


main()
