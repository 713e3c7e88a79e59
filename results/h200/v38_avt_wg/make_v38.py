"""Write candidates/scalar_gated_delta/v38a_avt_wg.py and v38b_avt_wg_merged.py from v29a_wsg.py: at D = 64 the
consumers' A Vt runs on wgmma (12 m64n32k8, A = the Vt^T fragments already in registers for K^T Vt, B = A^T hi / lo
in shared memory, written split by the prep warps in q's blocked layout) instead of 30 mma.sync a warp with their
A-tile loads and splits. v38a: its own wgmma group after the Vt fragments; v38b: the Vt fragments first and A Vt in
Q S0's last group (one wait fewer; registers split 152 / 120 by setmaxnreg, as it spilled at 128). D = 128 is v29a's (its shared memory has no room for A hi / lo)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

VT_FRAGS = """      // Vt^T fragments (A operand, rows j, k = s) for every s step, split.
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
"""

KEEPV = """        if constexpr (W::AVW) {
          wg_keep(vh);
          wg_keep(vl);
        }
"""

AVTQ = """        if constexpr (W::AVW) {
          if (qb == NKK / W::QG - 1) wsg_avt(O, vh, vl, sm + W::AM + nb * W::AMC);
        }
"""

OLD_AVT = """      // + Vt^T A^T, mma.sync
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
"""

NEW_AVT = """      // + Vt^T A^T: wgmma (AVW; in Q S0's last group when AVG), else mma.sync
      const float* am = sm + W::AM + nb * W::AMC;
      if constexpr (W::AVW) {
        if constexpr (!W::AVG) {
          wg_keep(O);
          wg_keep(vh);
          wg_keep(vl);
          wg_fence();
          wsg_avt(O, vh, vl, am);
          wg_commit();
          wg_wait0();
          wg_keep(O);
          wg_keep(vh);
          wg_keep(vl);
        }
      } else {
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
      }
"""

SUBS = [
    ("""  static constexpr int QG = 4;                       // k steps of Q S0 a wgmma group (one wait each)
""", """  static constexpr int QG = 4;                       // k steps of Q S0 a wgmma group (one wait each)
  // DP = 64: A Vt on wgmma, A^T hi / lo written by the prep warps as its B operand; AVG: in Q S0's last group
  static constexpr bool AVW = DP == 64;
  static constexpr bool AVG = @AVG@;
  static constexpr int AMC = AVW ? 2 * C * C : C * CS;  // A's floats a chunk
"""),
    ("""  static constexpr int GS = AM + 2 * C * CS;        // G_t, 2 chunks
""", """  static constexpr int GS = AM + 2 * AMC;           // G_t, 2 chunks
"""),
    ("""__device__ __forceinline__ void cta_sync() { asm volatile("bar.sync 0;" ::: "memory"); }
""", """// Offset (floats) of A^T (K = s, N = t) as a wgmma B operand: q's blocked layout with C columns.
__device__ __forceinline__ int wsg_aoff(int t, int s) { return (t >> 3) * 256 + (s >> 2) * 32 + (t & 7) * 4 + (s & 3); }

// O^T (64 x 32 per warpgroup) += Vt^T A^T: 4 s steps x 3 wgmma m64n32k8 (small terms first), A^T hi at am, lo at
// am + 1024. The caller fences, commits and waits.
__device__ __forceinline__ void wsg_avt(float (&O)[4][4], const uint32_t (&vh)[4][4], const uint32_t (&vl)[4][4],
                                        const float* am) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const uint64_t dh = wg_desc(am + 2 * ks * 32, 128, 1024), dl = wg_desc(am + 1024 + 2 * ks * 32, 128, 1024);
    wg_mma_n32(O, vl[ks], dh);
    wg_mma_n32(O, vh[ks], dl);
    wg_mma_n32(O, vh[ks], dh);
  }
}

__device__ __forceinline__ void cta_sync() { asm volatile("bar.sync 0;" ::: "memory"); }
"""),
    ("""  float* am = sm + W::AM + nb * C * CS;
  const int t = 16 * mtA + gid;
  const int s = 8 * ns + 2 * tig;
  am[t * CS + s] = (s <= t) ? a[0] : 0.f;
  am[t * CS + s + 1] = (s + 1 <= t) ? a[1] : 0.f;
  am[(t + 8) * CS + s] = (s <= t + 8) ? a[2] : 0.f;
  am[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? a[3] : 0.f;
}
""", """  float* am = sm + W::AM + nb * W::AMC;
  const int t = 16 * mtA + gid;
  const int s = 8 * ns + 2 * tig;
  const float m0 = (s <= t) ? a[0] : 0.f, m1 = (s + 1 <= t) ? a[1] : 0.f;
  const float m2 = (s <= t + 8) ? a[2] : 0.f, m3 = (s + 1 <= t + 8) ? a[3] : 0.f;
  if constexpr (W::AVW) {
    // split once here (the consumers split every A value v29a's way); s, s + 1 are adjacent in the layout
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(m0, h0, l0);
    split(m1, h1, l1);
    split(m2, h2, l2);
    split(m3, h3, l3);
    const int o0 = wsg_aoff(t, s), o1 = wsg_aoff(t + 8, s);
    *reinterpret_cast<uint2*>(am + o0) = make_uint2(h0, h1);
    *reinterpret_cast<uint2*>(am + o1) = make_uint2(h2, h3);
    *reinterpret_cast<uint2*>(am + C * C + o0) = make_uint2(l0, l1);
    *reinterpret_cast<uint2*>(am + C * C + o1) = make_uint2(l2, l3);
    wg_proxy_fence();  // visible to the consumers' wgmma after the CTA barrier
  } else {
    am[t * CS + s] = m0;
    am[t * CS + s + 1] = m1;
    am[(t + 8) * CS + s] = m2;
    am[(t + 8) * CS + s + 1] = m3;
  }
}
"""),
    (VT_FRAGS + OLD_AVT, "@VTPOS2@" + NEW_AVT),
    ("""      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in groups of QG k steps (the split S of a group is
""", """@VTPOS1@      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in groups of QG k steps (the split S of a group is
"""),
    ("""        wg_fence();
#pragma unroll
        for (int u = 0; u < W::QG; ++u) {
""", """@KEEPV@        wg_fence();
#pragma unroll
        for (int u = 0; u < W::QG; ++u) {
"""),
    ("""        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
      }
@VTPOS2@""", """        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
@KEEPV@      }
@VTPOS2@"""),
    ("""          const uint64_t dl = wg_desc(ql + dq * 32, 128, 32 * DP);
          wg_mma_n32(O, al[u], dh);
          wg_mma_n32(O, ah[u], dl);
          wg_mma_n32(O, ah[u], dh);
        }
        wg_commit();
""", """          const uint64_t dl = wg_desc(ql + dq * 32, 128, 32 * DP);
          wg_mma_n32(O, al[u], dh);
          wg_mma_n32(O, ah[u], dl);
          wg_mma_n32(O, ah[u], dh);
        }
@AVTQ@        wg_commit();
"""),
]

VARIANTS = {
    "v38a_avt_wg": ("false", "A Vt in its own wgmma group after the Vt fragments"),
    "v38b_avt_wg_merged": ("true", "the Vt fragments first and A Vt in Q S0's last wgmma group, registers 152 / 120"),
}


def main():
    base = (P / "v29a_wsg.py").read_text()
    for stem, (avg, what) in VARIANTS.items():
        src = base
        for old, new in SUBS:
            assert src.count(old) == 1, old[:100]
            src = src.replace(old, new)
        src = src.replace("@AVG@", avg)
        # the O accumulator is declared inside Q S0's block; the Vt fragments go before it when merged
        if avg == "true":
            # the Vt fragments live across Q S0 (112 registers of operands): the register file split at D = 64 too
            for a, b in (("REG_C = DP == 128 ? 168 : 0;", "REG_C = DP == 128 ? 168 : 152;"),
                         ("REG_P = DP == 128 ? 88 : 0;", "REG_P = DP == 128 ? 88 : 120;")):
                assert src.count(a) == 1, a
                src = src.replace(a, b)
            src = src.replace("@VTPOS1@", VT_FRAGS).replace("@VTPOS2@", "")
            src = src.replace("@KEEPV@", KEEPV).replace("@AVTQ@", AVTQ)
        else:
            src = src.replace("@VTPOS1@", "").replace("@VTPOS2@", VT_FRAGS)
            src = src.replace("@KEEPV@", "").replace("@AVTQ@", "")
        tag = stem.split("_")[0]
        src = src.replace("sgd_v29a_forward", f"sgd_{tag}_forward").replace('name="sgd_v29a_wsg",', f'name="sgd_{stem}",')
        src = (f"# {stem}: v29a_wsg (below) with A Vt on wgmma at D = 64 ({what}): A^T hi / lo\n"
               "# written by the prep warps in q's blocked layout as the B operand. D = 128 is v29a's.\n" + src)
        (P / f"{stem}.py").write_text(src)
        print("wrote", P / f"{stem}.py")


main()
