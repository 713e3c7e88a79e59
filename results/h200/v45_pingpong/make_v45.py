"""Write candidates/scalar_gated_delta/v45a_pingpong.py and v45b_offset.py from v43_wsg.py (prepared in session 21,
compiled, not run). At D = 128 the per-chunk CTA barrier becomes per-warpgroup hand-offs on named barriers, so the
two consumer warpgroups can run half a chunk apart: the producers bar.arrive "chunk c ready" once per warpgroup
(IDs 4-7, by warpgroup and chunk parity) and bar.sync "chunk c released" from both before they overwrite its
buffers (IDs 8-11); parity keeps two chunks' arrivals on different barriers. v45a also passes a token between the
warpgroups around Q S0 (IDs 12, 13), so their Q S0 phases alternate and one's scalar work runs under the other's
MMAs; v45b only starts warpgroup 1 half a chunk late (after warpgroup 0's first Q S0) and lets them run. D = 64 is
v43's (v29a's) code."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

HANDOFF = r"""// Ping-pong hand-offs at D = 128 (PP): chunk c ready for consumer warpgroup w on barrier 4 + 2 w + (c & 1) (the
// producers arrive, the warpgroup waits); chunk c released by warpgroup w on barrier 8 + 2 w + (c & 1) (the warpgroup
// arrives, the producers wait). A chunk's barrier is reused two chunks later, after the producers have waited for
// the release of the chunk before it, so no barrier ever holds arrivals of two chunks.
template <int DP>
__device__ __forceinline__ void wsg_ready_arrive(int c) {
  asm volatile("bar.arrive %0, %1;" ::"r"(4 + (c & 1)), "n"(WsgCfg<DP>::NPROD + 128) : "memory");
  asm volatile("bar.arrive %0, %1;" ::"r"(6 + (c & 1)), "n"(WsgCfg<DP>::NPROD + 128) : "memory");
}
template <int DP>
__device__ __forceinline__ void wsg_free_sync(int c) {
  asm volatile("bar.sync %0, %1;" ::"r"(8 + (c & 1)), "n"(WsgCfg<DP>::NPROD + 128) : "memory");
  asm volatile("bar.sync %0, %1;" ::"r"(10 + (c & 1)), "n"(WsgCfg<DP>::NPROD + 128) : "memory");
}
__device__ __forceinline__ void named_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void named_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }

"""


def sub(src, old, new):
    assert src.count(old) == 1, (old[:120], src.count(old))
    return src.replace(old, new)


def make(stem, ppt, what):
    src = (P / "v43_wsg.py").read_text()
    src = sub(src, "  static constexpr bool KVE = false;", f"  static constexpr bool PP = DP == 128;              // the consumer warpgroups ping-pong\n"
              f"  static constexpr bool PPT = {ppt};                   // ... with a Q S0 token between them\n"
              "  static constexpr bool KVE = false;")
    src = sub(src, "template <int DP>\n__global__ void __launch_bounds__(512, 1)\ngd_wsg_kernel(",
              HANDOFF + "template <int DP>\n__global__ void __launch_bounds__(512, 1)\ngd_wsg_kernel(")
    # producers
    src = sub(src, """    if (!loader) wsg_prepare<DP>(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    cta_sync();
    for (int ch = 0; ch < nchunks; ++ch) {
      if (ch + 1 < nchunks) {
        if (loader) __pipeline_wait_prior(0);
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
""", """    if (!loader) wsg_prepare<DP>(sm, 0, min(C, T), ptid, lane, pw, gid, tig);
    if constexpr (W::PP) wsg_ready_arrive<DP>(0);
    else cta_sync();
    for (int ch = 0; ch < nchunks; ++ch) {
      if (ch + 1 < nchunks) {
        if (loader) __pipeline_wait_prior(0);
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
        if constexpr (W::PP) {
          if (ch >= 1) wsg_free_sync<DP>(ch - 1);  // chunk c-1's buffers free
        }
""")
    src = sub(src, """          wsg_prepare<DP>(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        }
      }
      cta_sync();  // chunk c consumed; chunk c+1 prepared
    }
    return;
""", """          wsg_prepare<DP>(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        }
        if constexpr (W::PP) wsg_ready_arrive<DP>(ch + 1);
      }
      if constexpr (!W::PP) cta_sync();  // chunk c consumed; chunk c+1 prepared
    }
    if constexpr (W::PP) {
      for (int r = max(0, nchunks - 2); r < nchunks; ++r) wsg_free_sync<DP>(r);  // the last releases
    }
    return;
""")
    # consumers
    src = sub(src, """  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
""", """  const int wg = warp >> 2;
  if constexpr (W::PP) {
    if (W::PPT && wg == 1) named_arrive(12, 256);  // warpgroup 0 runs the first Q S0
  } else {
    cta_sync();
  }
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    if constexpr (W::PP) {
      named_sync(4 + 2 * wg + (ch & 1), W::NPROD + 128);  // chunk c ready
      if (!W::PPT && ch == 0 && wg == 1) named_sync(12, 256);  // half a chunk behind warpgroup 0
    }
""")
    src = sub(src, """      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in groups of QG k steps (the split S of a group is
""", """      if constexpr (W::PP && W::PPT) named_sync(12 + wg, 256);  // the other warpgroup's Q S0 issued
      // ---- O^T = S^T Q^T: DP / 8 k steps x 3 wgmma m64n32k8, in groups of QG k steps (the split S of a group is
""")
    src = sub(src, """      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
""", """      if constexpr (W::PP) {
        if (W::PPT) named_arrive(13 - wg, 256);  // the other warpgroup's turn
        else if (ch == 0 && wg == 0) named_arrive(12, 256);
      }
      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
""")
    src = sub(src, """      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k likewise from K^T).
""", """      if constexpr (W::PP && !W::PPT) {
        if (ch == 0 && wg == 0) named_arrive(12, 256);  // warpgroup 1 starts even if chunk 0 runs this path
      }
      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k likewise from K^T).
""")
    src = sub(src, """    cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}
""", """    if constexpr (W::PP) named_arrive(8 + 2 * wg + (ch & 1), W::NPROD + 128);  // chunk c released
    else cta_sync();  // chunk c consumed (its buffers free); chunk c+1 prepared
  }
}
""")
    src = src.replace("sgd_v43_forward", f"sgd_{stem.split('_')[0]}_forward").replace('name="sgd_v43_wsg",', f'name="sgd_{stem}",')
    first = src.index("\n") + 1
    src = f"# {stem}: v43_wsg (below) with, at D = 128, {what}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


make("v45a_pingpong", "true", "the two consumer warpgroups half a chunk apart, their Q S0 phases alternating (a token on\n# named barriers 12 / 13) and the CTA barrier replaced by per-warpgroup hand-offs with the producers")
make("v45b_offset", "false", "the CTA barrier replaced by per-warpgroup hand-offs with the producers and warpgroup 1\n# started half a chunk late (after warpgroup 0's first Q S0)")
