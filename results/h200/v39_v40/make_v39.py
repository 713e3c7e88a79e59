"""Write v39a_one_wait.py and v39b_early_ktvt.py (candidates/scalar_gated_delta) from v29a_wsg.py.
Both: at D = 64 Q S0 in one wgmma group (one wait fewer a chunk; its 64 split registers fit by splitting the
register file 152 / 120 with setmaxnreg); at D = 128 the Vt^T fragments built before Q S0 (v38b's order, which
measured 614 us against v29a's 623). v39b also issues K^T Vt at D = 64 before the y stores and waits for it after
them. v29b's dead staging branch (YST) is dropped. Same arithmetic: outputs bitwise v29a's."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

HELPERS = r"""// Vt^T fragments of chunk c (A operand, rows j0 and j0 + 8, k = s) for every s step, split.
template <int DP>
__device__ __forceinline__ void wsg_vt_frags(uint32_t (&vh)[4][4], uint32_t (&vl)[4][4], const float* vsm,
                                             const float* cfs, int j0, int tig) {
  constexpr int NCS = WsgCfg<DP>::NCS;
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

// Issue (no wait) acc = Vt^T K: a fresh 64 x 64 accumulator for each 64-column block, 4 k steps x 3 wgmma m64n64k8.
template <int NA>
__device__ __forceinline__ void wsg_ktvt_issue(float (&acc)[NA][8][4], uint32_t (&vh)[4][4], uint32_t (&vl)[4][4],
                                               const float* kth, const float* ktl) {
#pragma unroll
  for (int a = 0; a < NA; ++a)
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[a][kk][e] = 0.f;
#pragma unroll
  for (int a = 0; a < NA; ++a) wg_keep(acc[a]);
  wg_keep(vh);
  wg_keep(vl);
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int o = (2 * ks) * 32;
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const uint64_t dh = wg_desc(kth + 2048 * a + o, 128, 1024), dl = wg_desc(ktl + 2048 * a + o, 128, 1024);
      wg_mma_n64(acc[a], vl[ks], dh);
      wg_mma_n64(acc[a], vh[ks], dl);
      wg_mma_n64(acc[a], vh[ks], dh);
    }
  }
  wg_commit();
}

"""

BODY = r"""    if (!sfl[nb]) {
      const float* cfs = sm + W::CF + nb * C;
      uint32_t vh[4][4], vl[4][4];
      if constexpr (W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in groups of QG k steps (the split S of a group is
      // 8 QG registers), a wait each.
      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {
        uint32_t ah[W::QG][4], al[W::QG][4];
#pragma unroll
        for (int u = 0; u < W::QG; ++u) {
          const int kk = W::QG * qb + u;
          split(S[kk][0], ah[u][0], al[u][0]);
          split(S[kk][2], ah[u][1], al[u][1]);
          split(S[kk][1], ah[u][2], al[u][2]);
          split(S[kk][3], ah[u][3], al[u][3]);
        }
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
        wg_fence();
#pragma unroll
        for (int u = 0; u < W::QG; ++u) {
          const int dq = 2 * (W::QG * qb + u);  // 16-byte column of q where this k step starts
          const uint64_t dh = wg_desc(qs + dq * 32, 128, 32 * DP);
          const uint64_t dl = wg_desc(ql + dq * 32, 128, 32 * DP);
          wg_mma_n32(O, al[u], dh);
          wg_mma_n32(O, ah[u], dl);
          wg_mma_n32(O, ah[u], dh);
        }
        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
      }
      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
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
      // ---- S^T = G_C (S^T + Vt^T K), issued before the y stores when KVE, else after them.
      float acc[NA][8][4];
      if constexpr (W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      // y(c) = G_t O^T, rows t < n, from registers.
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int t = 8 * nt + 2 * tig;
        if (t < n) {
          const float g = gsc[t];
          yb[t * rs + j0] = O[nt][0] * g;
          yb[t * rs + j0 + 8] = O[nt][2] * g;
        }
        if (t + 1 < n) {
          const float g = gsc[t + 1];
          yb[(t + 1) * rs + j0] = O[nt][1] * g;
          yb[(t + 1) * rs + j0 + 8] = O[nt][3] * g;
        }
      }
      if constexpr (!W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      wg_wait0();
#pragma unroll
      for (int a = 0; a < NA; ++a) wg_keep(acc[a]);
      wg_keep(vh);
      wg_keep(vl);
      const float GC = gsc[C - 1];
#pragma unroll
      for (int a = 0; a < NA; ++a)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
#pragma unroll
          for (int e = 0; e < 4; ++e) S[8 * a + kk][e] = (S[8 * a + kk][e] + acc[a][kk][e]) * GC;
    } else {
"""

VARIANTS = {
    "v39a_one_wait": ("false", "Q S0 in one wgmma group at D = 64 (registers 152 / 120); Vt^T fragments before Q S0 at D = 128"),
    "v39b_early_ktvt": ("DP == 64", "v39a's changes (Q S0 in one wgmma group at D = 64, registers 152 / 120; Vt^T fragments before Q S0 at D = 128) and K^T Vt issued before the y stores at D = 64"),
}


def main():
    base = (P / "v29a_wsg.py").read_text()
    for stem, (kve, what) in VARIANTS.items():
        src = base
        subs = [
            ("  static constexpr int REG_C = DP == 128 ? 168 : 0;", "  static constexpr int REG_C = DP == 128 ? 168 : 152;"),
            ("  static constexpr int REG_P = DP == 128 ? 88 : 0;", "  static constexpr int REG_P = DP == 128 ? 88 : 120;"),
            ("""  static constexpr int QG = 4;                       // k steps of Q S0 a wgmma group (one wait each)
  static constexpr bool YST = false;                 // y staged in shared memory, stored as float4 rows
  static constexpr int YSS = DP + 4;                 // its row stride
""", f"""  static constexpr int QG = DP == 64 ? 8 : 4;        // k steps of Q S0 a wgmma group (one wait each)
  static constexpr bool VTF = DP == 128;             // Vt^T fragments built before Q S0
  static constexpr bool KVE = {kve};{' ' * (23 - len(kve))}// K^T Vt issued before the y stores
"""),
            ("""  static constexpr int YS = SF + 4;                  // y(c) rows [t][YSS] when YST
  static constexpr int TOTAL = YS + (YST ? C * YSS : 0);
""", """  static constexpr int TOTAL = SF + 4;
"""),
            ("template <int DP>\n__global__ void __launch_bounds__(512, 1)\ngd_wsg_kernel(",
             HELPERS + "template <int DP>\n__global__ void __launch_bounds__(512, 1)\ngd_wsg_kernel("),
        ]
        for old, new in subs:
            assert src.count(old) == 1, old[:100]
            src = src.replace(old, new)
        i = src.index("    if (!sfl[nb]) {\n      // ---- O^T = S^T Q^T: DP / 8")
        j = src.index("    } else {\n      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k likewise from K^T).")
        src = src[:i] + BODY + src[j + len("    } else {\n"):]
        assert "YST" not in src and "YSS" not in src
        tag = stem.split("_")[0]
        src = src.replace("sgd_v29a_forward", f"sgd_{tag}_forward").replace('name="sgd_v29a_wsg",', f'name="sgd_{stem}",')
        src = f"# {stem}: v29a_wsg (below) with {what}.\n" + src
        (P / f"{stem}.py").write_text(src)
        print("wrote", P / f"{stem}.py")


main()
