"""Write candidates/scalar_gated_delta/v50a_vts.py and v50b_vts_trim.py from v49b_ystore_fourbuf.py (session 23).
probe47 on v49d read the consumers' K^T Vt at ~690 cycles of a ~3,630-cycle medium chunk: its 12 wgmma take Vt^T
from registers, and a warp that issues wgmma with register operands is held until the tensor core has read them
(v26), so nothing of the consumer's own runs beside it. v50a (D = 64 only; D = 128 has no shared memory left) has
the five prep warps that build no A tile store chunk c+1's Vt^T (v scaled by beta_s / G_s, split hi / lo) in the
wgmma K-major layout; the consumers issue K^T Vt with both operands in shared memory right after Q S0, load A Vt's
mma.sync fragments from the same arrays, store y, and only then wait for K^T Vt. v50b also skips Q S0 in chunk 0
(the state is zero) and K^T Vt with the state update after the last chunk. Same values in the same order: outputs
should be bitwise v49b's (the prep warps' product and split are the consumers' expression)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


def vt_shared(src):
    src = sub(src, """  static constexpr int TOTAL = SF + 4;
  static_assert(REG_C * 32 * NCW""", """  static constexpr bool VTS = DP == 64;              // Vt^T hi / lo stored by the prep warps, K^T Vt from them
  static constexpr int VTH = SF + 4;                // Vt^T hi, 2 chunks of DP x C (K^T's layout); then lo
  static constexpr int TOTAL = VTH + (VTS ? 4 * C * DP : 0);
  static_assert(REG_C * 32 * NCW""")
    src = sub(src, "  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0, \"16-byte aligned\");\n",
              "  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0 && VTH % 4 == 0, \"16-byte aligned\");\n")
    # prep: the warps without an A tile store Vt^T of the chunk they prepared
    src = sub(src, """  if (safe || pw >= 6) return;
  wsg_atile<DP>(sm, c, pw, gid, tig);
}
""", """  if (safe) return;
  if constexpr (W::VTS) {
    if (pw >= 6) {
      wsg_vt_store<DP>(sm, buf, nb, ptid - 6 * 32);
      wg_proxy_fence();  // Vt^T visible to the consumers' wgmma after the CTA barrier
      return;
    }
  }
  if (pw >= 6) return;
  wsg_atile<DP>(sm, c, pw, gid, tig);
}
""")
    src = sub(src, """// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible:""", """// Vt^T of a chunk (row j, k = s: v[s][j] beta_s / G_s, split) into VTH / VTL in K^T's layout (rows j unpermuted), by
// the prep threads vtid = 0 .. NP - 193; the product and split are wsg_vt_frags's.
template <int DP>
__device__ __forceinline__ void wsg_vt_store(float* sm, const float* buf, int nb, int vtid) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, NCS = W::NCS, NVT = W::NP - 6 * 32, NV4 = C * DP / 4;
  const float* vsm = buf + W::VR;
  const float* cfs = sm + W::CF + nb * C;
  float* vth = sm + W::VTH + nb * C * DP;
  float* vtl = vth + 2 * C * DP;
  for (int i = vtid; i < NV4; i += NVT) {
    const int j = i & (DP - 1), s4 = (i / DP) * 4;
    uint32_t h[4], l[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) split(vsm[(s4 + u) * NCS + j] * cfs[s4 + u], h[u], l[u]);
    const int o = wg_ktoff(j, s4);
    *reinterpret_cast<uint4*>(vth + o) = make_uint4(h[0], h[1], h[2], h[3]);
    *reinterpret_cast<uint4*>(vtl + o) = make_uint4(l[0], l[1], l[2], l[3]);
  }
}

// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible:""")
    # both-operands-in-shared wgmma and the K^T Vt issue from the stored Vt^T
    src = sub(src, """// One chunk's inputs: q into its blocked layout, k and v (and channel gates) as rows, scalar gate and beta.
template <bool CHAN>""", """// d (64 x 64 per warpgroup) += a (64 x 8, shared memory) * b (8 x 64, shared memory): nothing holds the warp.
__device__ __forceinline__ void wg_mma_n64_ss(float (&d)[8][4], uint64_t ad, uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
        "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(ad), "l"(bd));
}

// One chunk's inputs: q into its blocked layout, k and v (and channel gates) as rows, scalar gate and beta.
template <bool CHAN>""")
    src = sub(src, """template <int DP>
__global__ void __launch_bounds__(512, 1)
gd_wsg_kernel(""", """// Issue (no wait) acc = Vt^T K with Vt^T hi / lo from shared memory (D = 64): wsg_ktvt_issue's products in its order.
__device__ __forceinline__ void wsg_ktvt_issue_ss(float (&acc)[8][4], const float* vth, const float* vtl,
                                                  const float* kth, const float* ktl) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[kk][e] = 0.f;
  wg_keep(acc);
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int o = (2 * ks) * 32;
    const uint64_t ah = wg_desc(vth + o, 128, 1024), al = wg_desc(vtl + o, 128, 1024);
    const uint64_t dh = wg_desc(kth + o, 128, 1024), dl = wg_desc(ktl + o, 128, 1024);
    wg_mma_n64_ss(acc, al, dh);
    wg_mma_n64_ss(acc, ah, dl);
    wg_mma_n64_ss(acc, ah, dh);
  }
  wg_commit();
}

// A Vt's mma.sync fragments (rows j0, j0 + 8; k = 8 ks + tig, + 4) loaded from the stored Vt^T hi / lo.
__device__ __forceinline__ void wsg_vt_load(uint32_t (&vh)[4][4], uint32_t (&vl)[4][4], const float* vth,
                                            const float* vtl, int j0, int tig) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int s0 = 8 * ks + tig;
    const int o0 = wg_ktoff(j0, s0), o1 = wg_ktoff(j0 + 8, s0), o2 = wg_ktoff(j0, s0 + 4), o3 = wg_ktoff(j0 + 8, s0 + 4);
    vh[ks][0] = __float_as_uint(vth[o0]);
    vh[ks][1] = __float_as_uint(vth[o1]);
    vh[ks][2] = __float_as_uint(vth[o2]);
    vh[ks][3] = __float_as_uint(vth[o3]);
    vl[ks][0] = __float_as_uint(vtl[o0]);
    vl[ks][1] = __float_as_uint(vtl[o1]);
    vl[ks][2] = __float_as_uint(vtl[o2]);
    vl[ks][3] = __float_as_uint(vtl[o3]);
  }
}

template <int DP>
__global__ void __launch_bounds__(512, 1)
gd_wsg_kernel(""")
    # consumers: K^T Vt issued after Q S0 from shared memory, waited after the y stores
    src = sub(src, """      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
""", """      float acc[NA][8][4];
      if constexpr (W::VTS) {
        // ---- K^T Vt issued now from shared memory; it runs under A Vt and the y stores, waited after them.
        const float* vth = sm + W::VTH + nb * C * DP;
        wsg_ktvt_issue_ss(acc[0], vth, vth + 2 * C * DP, kth, ktl);
        wsg_vt_load(vh, vl, vth, vth + 2 * C * DP, j0, tig);
      } else if constexpr (!W::VTF) {
        wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
      }
""")
    src = sub(src, """      float acc[NA][8][4];
      if constexpr (W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
""", """      if constexpr (W::KVE && !W::VTS) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
""")
    src = sub(src, """      if constexpr (!W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
""", """      if constexpr (!W::KVE && !W::VTS) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
""")
    return src


def trims(src):
    """Chunk 0: no Q S0 (S is zero, so O stays +0 as the wgmma would leave it). Last chunk: no K^T Vt, no update."""
    src = sub(src, """#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {
        uint32_t ah[W::QG][4], al[W::QG][4];""", """      if (ch > 0) {
#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {
        uint32_t ah[W::QG][4], al[W::QG][4];""")
    src = sub(src, """        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
      }
      float acc[NA][8][4];
""", """        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
      }
      }  // ch > 0
      float acc[NA][8][4];
""")
    src = sub(src, """        wsg_ktvt_issue_ss(acc[0], vth, vth + 2 * C * DP, kth, ktl);
""", """        if (ch + 1 < nchunks) wsg_ktvt_issue_ss(acc[0], vth, vth + 2 * C * DP, kth, ktl);
""")
    src = sub(src, """      if constexpr (!W::KVE && !W::VTS) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      wg_wait0();
""", """      if (ch + 1 == nchunks) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      if constexpr (!W::KVE && !W::VTS) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      wg_wait0();
""")
    return src


def make(stem, what, trim=False):
    src = (P / "v49b_ystore_fourbuf.py").read_text()
    src = vt_shared(src)
    if trim:
        src = trims(src)
    src = src.replace("sgd_v49b_forward", f"sgd_{stem.split('_')[0]}_forward").replace(
        'name="sgd_v49b_ystore_fourbuf",', f'name="sgd_{stem}",')
    src = f"# {stem}: v49b_ystore_fourbuf (below) with {what}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


make("v50a_vts", "at D = 64 Vt^T stored split by the five prep warps that build no A tile,\n"
     "# K^T Vt issued from shared memory after Q S0 and waited after the y stores")
make("v50b_vts_trim", "at D = 64 Vt^T stored split by the five prep warps that build no A tile,\n"
     "# K^T Vt issued from shared memory after Q S0 and waited after the y stores; chunk 0 without Q S0, the last\n"
     "# chunk without K^T Vt and the state update", trim=True)
