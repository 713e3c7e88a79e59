"""Write .gpu/v80a_tmawg1.py from candidates/scalar_gated_delta/v79b_gblate.py (session 42, not run: the session's
device time was spent). A candidate, not an ablation.

Why. probe76 reg on v79a and v79b (results/h100/v79, call 3): warp 15 issues chunk c+2's three TMA boxes (~550
cycles) and, in v79b, its gate and beta loads before its round one, and is the vote's last arrival (round one
2,920 cycles in v79a, 3,408 in v79b, against 2,140-2,710 for the other prep warps, which wait 560-1,460 at the
vote). Warpgroup 1 (warps 12-15) reaches the CTA barrier 140-870 cycles before the consumers' warp 0, warpgroup 0
~430-540 after it: the vote, then A on warpgroup 0, set the chunk. v77 (session 40) spread the boxes over prep
warps 1-3 of v76b, warpgroup 0's, and lost nothing but gained nothing: it lengthened warpgroup 0's round one, which
A then follows. v80a spreads them over warpgroup 1's warps 13-15 (q, k, v: one box each) and gives the gate and
beta loads and stores to warp 12, at the loop top where v76b issued them (its round-one fence ~2,400 cycles
later finds them landed). No operation on data changes: y is bitwise v79b's.

Prediction (written before any run; probe76 bare and reg at large beside v79b, then a harness run of both):
warps 13-15's round one ~2,420 + ~190 (one box and its fence) = ~2,600, warp 12's ~2,400 + the loads' issue; the
vote's last arrival ~2,920-3,400 -> ~2,600-2,700, so warpgroup 0 starts A ~300-700 cycles earlier; the chunk
(bare) 6,153 -> ~5,850-6,000 if the wait is not refilled (the lesson of v66 / v71b / v75 / v77 / v78a: it may be),
the consumers' wait at the barrier 360-580 -> ~100-300; harness large 455 -> ~440-450 us on an H100. If the chunk
reads >= ~6,100, the vote's wait is not on the path any more (A's length is), and the next file shares A's wgmma
between the warpgroups instead."""
from make_v77 import ISSUE_V76B, spread_boxes
from variant import catalogue_source, write_variant


def sub(src: str, old: str, new: str) -> str:
    assert src.count(old) == 1, (old[:200], src.count(old))
    return src.replace(old, new)


src = catalogue_source("v79b_gblate", "HEAD")
# the gate and beta by warp 12 (pw 4) at the loop top, as v76b had them on warp 15
src = sub(src, """    const bool issuer = pw == W::NPW - 1;
""", """    const bool issuer = pw == W::NPW - 1;  // chunks 0 and 1's boxes; later chunks' by warps 13-15, one box each
    const bool gbw = pw == W::NPW - 4;      // warp 12: every chunk's gate and beta
""")
src = sub(src, """        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
      }
      wsh_gb_load(gate, beta, b, h, T, H, 0, lane, gn, bn);""", """        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
      }
    }
    if (gbw) {
      wsh_gb_load(gate, beta, b, h, T, H, 0, lane, gn, bn);""")
src = sub(src, """        if (issuer) {
          wsh_gb_store(sm, ch + 1, gn, bn, lane);
        }""", """        if (gbw) {
          wsh_gb_store(sm, ch + 1, gn, bn, lane);
          // chunk c + 2's gate and beta a whole chunk before they are stored (warp 12 issues no box: its next
          // proxy fence, round one's, comes ~2,400 cycles after these loads)
          if (ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
        }""")
src = sub(src, """          WSH_MARK(7, ch + 1);
          // chunk c + 2's gate and beta a whole chunk before they are stored, after the boxes: the boxes' proxy
          // fence would wait for these loads; round one's, ~2,400 cycles later, finds them landed
          wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
        }""", """          WSH_MARK(7, ch + 1);
        }""")
src = spread_boxes(src, "v80a_tmawg1", ISSUE_V76B, 5)
write_variant(src, "v79b_gblate", "v80a_tmawg1",
              "# v80a_tmawg1: v79b_gblate (below) with chunk c+2's three TMA boxes issued by prep warps 13-15, one each,\n"
              "# and every chunk's gate and beta loaded and stored by warp 12 at the loop top.")

# v80b_gbpf (session 43, written before its call): v80a with chunk c+3's gate and beta prefetched into L2 by warp 12
# at the loop top, right after it loads chunk c+2's. Why: the harness flushes L2 before each call and the q / k / v
# streams keep DRAM busy (~2.4 TB/s at 455 us), so a gate load that misses L2 may take ~1,500-3,000 cycles, more than
# the ~2,400 cycles warp 12 has before its round-one fence waits for it; probe76 (no flush) keeps the 4 MB of gate and
# beta in L2 between calls and cannot see this. Prediction: probe76 bare (warm L2) within 0.3% of v80a; probe76
# --flush and the harness at large 0-10 us under v80a if the loads' latency is on warp 12's path, equal if not.
# y is bitwise v80a's.
src = sub(src, """__device__ __forceinline__ void wsh_gb_store(float* sm, int ca, float g, float bt, int lane) {""",
          """// Chunk ca's gate and beta (lane t) fetched into L2 only: no register waits for them.
__device__ __forceinline__ void wsh_gb_prefetch(const float* gate, const float* beta, int b, int h, int T, int H,
                                                int ca, int lane) {
  const int t = ca * WshCfg::C + lane;
  if (t < T) {
    const long long o = ((long long)b * T + t) * H + h;
    asm volatile("prefetch.global.L2 [%0];" ::"l"(gate + o));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(beta + o));
  }
}
__device__ __forceinline__ void wsh_gb_store(float* sm, int ca, float g, float bt, int lane) {""")
src = sub(src, """          if (ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
""", """          if (ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
          // and chunk c + 3's into L2, so that load finds them there a chunk from now (the harness flushes L2)
          if (ch + 3 < nchunks) wsh_gb_prefetch(gate, beta, b, h, T, H, ch + 3, lane);
""")
write_variant(src, "v79b_gblate", "v80b_gbpf",
              "# v80b_gbpf: v80a_tmawg1 (v79b_gblate below with chunk c+2's TMA boxes on prep warps 13-15 and the gate and\n"
              "# beta on warp 12) with chunk c+3's gate and beta prefetched into L2 by warp 12.")
