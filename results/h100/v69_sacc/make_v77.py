"""Write .gpu/v77_tmaspread.py from candidates/scalar_gated_delta/v76b_tma5d.py (session 37).

Calls 15-16 (an H200, results/h200/v76): v76b's three 5D TMA boxes cut warp 15's issue from 1,418 cycles (v76a's
twelve boxes) to 578, and its chunk (probe76 reg) to 6,729 cycles; large 487 µs against v69's 502. The chunk is
still the prep's: warp 15 issues the boxes before its round one (3,264 cycles against 2,337-2,690 for the other
prep warps), so warpgroup 0 waits 768-1,047 cycles at the vote, then builds A for ~2,550 and reaches the barrier
~780 cycles after the consumers (5,370-5,700 top to arrival).

v77_tmaspread: the same three boxes at the same place (the loop top, after the producers' barrier: ~6,300 cycles of
lead, which v70 showed a chunk's load needs), issued by prep warps 1, 2 and 3 (q, k, v: one box each, after each
one's own proxy fence) instead of all three by warp 15. Warps 9-11 had the shortest round ones (2,337-2,476). Each
buffer's mbarrier now counts three arrivals, one per box (arrive.expect_tx of its own bytes), so no box can complete
a phase another has not yet armed; the first two chunks, issued by one thread, arrive three times. No operation on
data changes: y is bitwise v76b's (so v69's).

An earlier form of this file (make_v77.py at 3c15aaa) issued the boxes after the vote (v77a by prep warps 4-6,
v77b by warp 15); withdrawn before any run: v70_tmalate (session 30) issued them after the vote and lost 76 µs,
the prep waiting ~2,420 cycles a chunk for data that needs ~6,800 to land.
Prediction (written before the run): warp 15's round one 3,264 -> ~2,690; warps 9-11's 2,337-2,476 -> ~2,550-2,700
(each ~190-250 cycles of fence and one box); the vote's wait ~800-1,050 -> ~50-250; the prep's chain ~5,800-5,950
cycles, the consumers' ~5,700 plus the barrier: chunk (reg) 6,729 -> ~6,000-6,150, bare 6,573 -> ~5,900-6,050;
**large 487 -> ~435-450 µs on an H200**. If the fences at the loop top wait for something the issue did not (the
consumers' reads of the v buffer are ordered by the CTA barrier before them), warps 9-11 grow instead and the gain
shrinks toward none."""
from variant import catalogue_source, write_variant



ISSUE_V76B = """        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }"""


def spread_boxes(src: str, name: str, issue: str, first: int) -> str:
    """`src` with chunk c+2's three TMA boxes (q, k, v) issued by prep warps first .. first + 2, one each, in place
    of `issue` (the issuer's block that issues all three); each buffer's mbarrier counts three arrivals."""
    def sub(old, new, count=1):
        nonlocal src
        assert src.count(old) == count, (name, old[:200], src.count(old))
        src = src.replace(old, new)

    sub("""    for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);""",
        """    // three arrivals a phase: one per TMA box of a chunk (q, k, v), each armed by its issuer
    for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 3);""")
    sub("""__device__ __forceinline__ void mbar_wait(uint64_t* m, uint32_t parity) {""",
        """__device__ __forceinline__ void mbar_arrive(uint64_t* m) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sm_addr(m)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* m, uint32_t parity) {""")
    sub("""  mbar_expect_tx(m, 3 * W::TILE * 4);
  const int t0 = ca * W::C;
  tma_tile(qd, tq, h, t0, b, m);""", """  mbar_expect_tx(m, 3 * W::TILE * 4);
  mbar_arrive(m);  // the barrier counts three arrivals (one per box when three warps issue them)
  mbar_arrive(m);
  const int t0 = ca * W::C;
  tma_tile(qd, tq, h, t0, b, m);""")
    sub("""__device__ __forceinline__ void wsh_wait_chunk(float* sm, int c) {""",
        """// One of chunk ca's three boxes (part 0: q, 1: k, 2: v) by the calling thread, arriving on the chunk's mbarrier
// with its own bytes.
__device__ __forceinline__ void wsh_tma_part(float* sm, const CUtensorMap* map, int part, int ca, int b, int h) {
  using W = WshCfg;
  uint64_t* m = reinterpret_cast<uint64_t*>(sm + W::MB) + ca % W::NBUF;
  float* dst = part == 2 ? sm + W::VB + (ca % W::NBUF) * W::TILE
                         : sm + (ca % W::NBQK) * W::QKBUF + (part == 0 ? W::QT : W::KT);
  wg_proxy_fence();  // this thread's view: the buffer's earlier generic reads (ordered by the CTA barrier) first
  mbar_expect_tx(m, W::TILE * 4);
  tma_tile(dst, map, h, ca * W::C, b, m);
}
__device__ __forceinline__ void wsh_wait_chunk(float* sm, int c) {""")
    sub(issue, f"""        if (pw >= {first} && pw <= {first + 2} && ch + 2 < nchunks) {{
          // chunk c + 2, one box per warp (prep warps {first}-{first + 2}: q, k, v): q / k into chunk c's buffers (split during
          // chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_part(sm, pw == {first} ? &tq : pw == {first + 1} ? &tk : &tv, pw - {first}, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }}""")
    return src


if __name__ == "__main__":
    base = "v76b_tma5d"
    write_variant(spread_boxes(catalogue_source(base, "e9dcac4"), "v77_tmaspread", ISSUE_V76B, 1), base,
                  "v77_tmaspread", "# v77_tmaspread: v76b_tma5d (below) with chunk c+2's three TMA boxes issued by prep "
                  "warps 1-3, one each, not all by warp 15")
