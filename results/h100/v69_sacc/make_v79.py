"""Write .gpu/v79a_an64.py from candidates/scalar_gated_delta/v76b_tma5d.py, then .gpu/v79b_gblate.py from it
(session 42): candidates, not ablations (their outputs are checked).

Why. v78b (session 41, results/h100/v78) bounded A: without it the chunk falls 6,578 -> 5,671 cycles (probe76 bare,
large), and the target (450 us on an H200) needs ~6,080. v76b builds A on warpgroup 0 as 16 `m64n32k16` with both
operands in shared memory ([q hi; q lo] stacked as M = 64, times K hi and K lo in two instructions a k step), then
hands each row's hi and lo parts between warps pw and pw ^ 2 through shared memory behind a barrier of its own.
v79a removes work and a step of A's chain, same values up to the order of four fp32 partial sums:

  - K hi and K lo of a chunk adjacent ([hi | lo] as one N = 64 operand, wsh_qoff's layout each): A is 8
    `m64n64k16` a chunk instead of 16 `m64n32k16` (wgbench, session 26: N = 32 runs at 3/4 of the fp16 pipe's peak,
    N = 64 at its peak), and reads 32 KB of operands instead of 48;
  - q's pieces interleaved by 8-step group (hi of steps 8w..8w+7, then their lo: wsh_qoff2), so that A's M row
    16 w + gid holds q hi of step 8 w + gid and row 16 w + gid + 8 its q lo: every thread holds both parts of its
    row's terms, and the hand-over (2 float4 stores, a 128-thread barrier, 2 float4 loads) goes. The consumers' Q S0
    reads the same pieces with a stride of 4,096 bytes between step groups instead of 2,048 (its descriptors only).

Prediction (written before the run; probe76 bare at large beside v76b on one machine): warpgroup 0's round two
~2,560 -> ~2,200-2,400 cycles, the chunk 6,578 -> ~6,250-6,450 (-2 to -5%), the consumers' barrier wait ~830-1,030
-> ~500-850; in a harness run large 487 -> ~465-480 us on an H200 (~460-478 on an H100 against v76b's 484-491).
Medium and seed as v76b (D = 64 and the seed shape run other kernels). Outputs within the tolerance at every counted
compare53 case, err/tol within ~10% of v76b's. If the chunk reads >= ~6,500, A's cost is not its wgmma count nor its
hand-over, and the next file moves A's work elsewhere instead of thinning it."""
from pathlib import Path

from variant import catalogue_source, write_variant

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())


def sub(src: str, old: str, new: str, count: int = 1) -> str:
    assert src.count(old) == count, (old, src.count(old))
    return src.replace(old, new)


src = catalogue_source("v76b_tma5d", "e9dcac4")

# layout: k's pieces for A, hi then lo of each chunk (one N = 64 operand)
src = sub(src, "  static constexpr int QH = GB + NBUF * GBUF;       // q hi then q lo (wsh_qoff by step) of chunk 0, then of 1\n",
          "  static constexpr int QH = GB + NBUF * GBUF;       // q hi / lo interleaved by 8-step group (wsh_qoff2), chunk 0 then 1\n")
src = sub(src, "  static constexpr int KAH = QL + 2 * H16;          // k hi (wsh_qoff by step), 2 chunks, for A\n"
               "  static constexpr int KAL = KAH + 2 * H16;         // k lo, for A\n"
               "  static constexpr int KH = KAL + 2 * H16;          // k hi (wsh_koff by state column), 2 chunks, for K^T Vt\n",
          "  static constexpr int KAH = QL + 2 * H16;          // k hi then k lo (wsh_qoff by step) of chunk 0, then of 1: A's B\n"
          "  static constexpr int KH = KAH + 4 * H16;          // k hi (wsh_koff by state column), 2 chunks, for K^T Vt\n")
src = sub(src, "__device__ __forceinline__ int wsh_qoff(int t, int i) { return (t >> 3) * 1024 + (i >> 3) * 64 + (t & 7) * 8 + (i & 7); }\n",
          "__device__ __forceinline__ int wsh_qoff(int t, int i) { return (t >> 3) * 1024 + (i >> 3) * 64 + (t & 7) * 8 + (i & 7); }\n"
          "// q's pieces: hi of steps 8 w .. 8 w + 7 (2,048 bytes), then their lo: as A's M = 64 operand (rows 16 w .. 16 w + 7\n"
          "// hi, 16 w + 8 .. lo of the same steps) each thread of A's accumulator holds both parts of its row.\n"
          "__device__ __forceinline__ int wsh_qoff2(int t, int i) { return (t >> 3) * 2048 + (i >> 3) * 64 + (t & 7) * 8 + (i & 7); }\n")

# the SS m64n64k16 A needs
src = sub(src, "// A = causal(Q K^T) of chunk c on the first prep warpgroup:",
          "// d (64 x 64 per warpgroup) += a (64 x 16 fp16, shared memory) * b (16 x 64 fp16, shared memory), both K-major.\n"
          "__device__ __forceinline__ void wh_mma_ss_n64(float (&d)[8][4], uint64_t ad, uint64_t bd) {\n"
          "  asm volatile(\n"
          "      \"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 \"\n"
          "      \"{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,\"\n"
          "      \"%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1, 0, 0;\"\n"
          "      : \"+f\"(d[0][0]), \"+f\"(d[0][1]), \"+f\"(d[0][2]), \"+f\"(d[0][3]), \"+f\"(d[1][0]), \"+f\"(d[1][1]), \"+f\"(d[1][2]),\n"
          "        \"+f\"(d[1][3]), \"+f\"(d[2][0]), \"+f\"(d[2][1]), \"+f\"(d[2][2]), \"+f\"(d[2][3]), \"+f\"(d[3][0]), \"+f\"(d[3][1]),\n"
          "        \"+f\"(d[3][2]), \"+f\"(d[3][3]), \"+f\"(d[4][0]), \"+f\"(d[4][1]), \"+f\"(d[4][2]), \"+f\"(d[4][3]), \"+f\"(d[5][0]),\n"
          "        \"+f\"(d[5][1]), \"+f\"(d[5][2]), \"+f\"(d[5][3]), \"+f\"(d[6][0]), \"+f\"(d[6][1]), \"+f\"(d[6][2]), \"+f\"(d[6][3]),\n"
          "        \"+f\"(d[7][0]), \"+f\"(d[7][1]), \"+f\"(d[7][2]), \"+f\"(d[7][3])\n"
          "      : \"l\"(ad), \"l\"(bd));\n"
          "}\n\n"
          "// A = causal(Q K^T) of chunk c on the first prep warpgroup:")

# A: 8 m64n64k16, no hand-over
src = sub(src, """// A = causal(Q K^T) of chunk c on the first prep warpgroup: the stacked operand [q hi; q lo] (64 rows) times K hi
// and K lo, 8 k steps x 2 wgmma. Rows 0..31 hold q hi k, rows 32..63 q lo k: warp pw (rows 16 pw + gid, + 8) and
// warp pw ^ 2 hold the two parts of steps t = 16 (pw & 1) + gid and + 8. Warps 0-1 keep row t, warps 2-3 row t + 8,
// each handing the other row's part to its partner; then the row is unscaled by step (q's scale for t, k's for s),
// masked and stored for A Vt.
""", """// A = causal(Q K^T) of chunk c on the first prep warpgroup: [q hi; q lo] interleaved by step group (64 rows) times
// [K hi | K lo] (64 columns), 8 k steps x 1 wgmma. Warp pw's rows 16 pw + gid and + 8 hold q hi and q lo of step
// t = 8 pw + gid, and columns s and 32 + s k hi and k lo of step s: each thread sums its row's four parts, then the
// row is unscaled by step (q's scale for t, k's for s), masked and stored for A Vt.
""")
start = src.index("__device__ __forceinline__ void wsh_amat(float* sm, int nb, int pw, int gid, int tig) {")
end = src.index("  const float* rq = sm + W::RQ + nb * C;\n", start)
src = src[:start] + """__device__ __forceinline__ void wsh_amat(float* sm, int nb, int pw, int gid, int tig) {
  using W = WshCfg;
  constexpr int C = W::C;
  const float* qp = sm + W::QH + 2 * nb * W::H16;  // M row 16 w + 8 h + r: piece h of q's step 8 w + r
  const float* kp = sm + W::KAH + 2 * nb * W::H16;  // N column 32 h + s: piece h of k's step s
  float a[8][4];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[nt][e] = 0.f;
  wg_keep(a);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)  // columns 16 kk ..: 128 halves (64 floats) a step
    wh_mma_ss_n64(a, wg_desc(qp + 64 * kk, 128, 2048), wg_desc(kp + 64 * kk, 128, 2048));
  wg_commit();
  wg_wait0();
  wg_keep(a);
  const int t = 8 * pw + gid;  // e = 0, 1: q hi's row t; e = 2, 3: q lo's; nt + 4: k lo's columns
""" + src[end:]
src = sub(src, """    // hi part + lo part (rows 0..31 are q hi's)
    const float h0 = top ? kp[2 * nt] : rv[2 * nt], l0 = top ? rv[2 * nt] : kp[2 * nt];
    const float h1 = top ? kp[2 * nt + 1] : rv[2 * nt + 1], l1 = top ? rv[2 * nt + 1] : kp[2 * nt + 1];
    x0[2 * nt] = (s <= t) ? (h0 + l0) * r0 * cx : 0.f;
    x0[2 * nt + 1] = (s + 1 <= t) ? (h1 + l1) * r0 * cy : 0.f;
""", """    // the four parts, the small ones first: lo lo, lo hi, hi lo, hi hi
    const float v0 = ((a[nt + 4][2] + a[nt][2]) + a[nt + 4][0]) + a[nt][0];
    const float v1 = ((a[nt + 4][3] + a[nt][3]) + a[nt + 4][1]) + a[nt][1];
    x0[2 * nt] = (s <= t) ? v0 * r0 * cx : 0.f;
    x0[2 * nt + 1] = (s + 1 <= t) ? v1 * r0 * cy : 0.f;
""")

# writers and readers of the pieces
src = sub(src, """template <bool WMAX>
__device__ __forceinline__ float wsh_split_q(""", """template <bool WMAX, bool QI = false>
__device__ __forceinline__ float wsh_split_q(""")
src = sub(src, "    const int o = wsh_qoff(t, 4 * (g + 4 * u)) >> 1;\n",
          "    const int o = (QI ? wsh_qoff2(t, 4 * (g + 4 * u)) : wsh_qoff(t, 4 * (g + 4 * u))) >> 1;\n")
src = sub(src, """    wsh_split_q<false>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16),
                       reinterpret_cast<uint32_t*>(sm + W::QH + (2 * nb + 1) * W::H16), sm + W::RQ + nb * C, pw, lane);""",
          """    wsh_split_q<false, true>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16),
                             reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16 + 512), sm + W::RQ + nb * C, pw,
                             lane);""")
src = sub(src, """    const float m = wsh_split_q<true>(kt, reinterpret_cast<uint32_t*>(sm + W::KAH + nb * W::H16),
                                      reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16),""",
          """    const float m = wsh_split_q<true>(kt, reinterpret_cast<uint32_t*>(sm + W::KAH + 2 * nb * W::H16),
                                      reinterpret_cast<uint32_t*>(sm + W::KAH + (2 * nb + 1) * W::H16),""")
src = sub(src, """        const uint64_t bqh = wg_desc(sm + W::QH + 2 * nb * W::H16, 128, 2048);
        const uint64_t bql = wg_desc(sm + W::QH + (2 * nb + 1) * W::H16, 128, 2048);""",
          """        const uint64_t bqh = wg_desc(sm + W::QH + 2 * nb * W::H16, 128, 4096);  // wsh_qoff2: step groups 4 KB apart
        const uint64_t bql = wg_desc(sm + W::QH + 2 * nb * W::H16 + 512, 128, 4096);""")
src = sub(src, """      const __half* qpl = reinterpret_cast<const __half*>(sm + W::QH + (2 * nb + 1) * W::H16);
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAL + nb * W::H16);""",
          """      const __half* qpl = qph + 1024;
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + 2 * nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAH + (2 * nb + 1) * W::H16);""")
src = sub(src, """          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + o));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + o));""",
          """          const int oq = wsh_qoff2(t, i);
          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + oq));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + oq));""")
write_variant(src, "v76b_tma5d", "v79a_an64",
              "# v79a_an64: v76b_tma5d (below) with A as 8 m64n64k16 over [k hi | k lo] and q's pieces interleaved by\n"
              "# step group, so that each thread of A holds both parts of its row (no hand-over between warps).")

# v79b_gblate (written after v79a's two calls; results/h100/v79). probe76 reg reads warp 15's issue of chunk c+2's
# three TMA boxes at ~560 cycles (v76b 577), and that warp is the vote's last arrival (round one ~2,920 against
# ~2,260-2,430 for the other prep warps, which wait ~620-830 at the vote). The issue starts with a proxy fence, and
# the same lane issued the global loads of chunk c+2's gate and beta ~370 cycles before it: if the fence waits for
# them (the file's own comment says the round-one fence waits for the thread's outstanding loads), most of the 560
# is DRAM latency. v79b issues those loads right after the boxes instead; the next fence on that lane (round one's,
# ~2,400 cycles later) finds them landed. Same values: only when the issuer's loads are issued moves.
# Prediction (before its call; probe76 bare and reg at large, beside v79a): warp 15's TMA issue ~560 -> ~100-200
# cycles, its round one ~2,920 -> ~2,500-2,600, the other prep warps' vote wait down by ~300-400; the chunk (bare)
# 6,184 -> ~5,850-6,000 if the freed wait is not refilled (v78a's lesson: removing the vote left the chunk where it
# was, so it may be); harness large 473 -> ~452-462 us on an H100. If the issue stays >= ~450, the fence does not
# wait for the loads and the 560 is the copies' own issue.
src = (ROOT / ".gpu/v79a_an64.py").read_text()
src = sub(src, """          wsh_gb_store(sm, ch + 1, gn, bn, lane);
          // chunk c + 2's gate and beta a whole chunk before they are stored (the round-one fence comes ~4,000
          // cycles after this load; it waits for the thread's outstanding loads)
          if (ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
""", """          wsh_gb_store(sm, ch + 1, gn, bn, lane);
""")
src = sub(src, """          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
""", """          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
          // chunk c + 2's gate and beta a whole chunk before they are stored, after the boxes: the boxes' proxy
          // fence would wait for these loads; round one's, ~2,400 cycles later, finds them landed
          wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
""")
write_variant(src, "v79a_an64", "v79b_gblate",
              "# v79b_gblate: v79a_an64 (below) with the issuer's loads of chunk c+2's gate and beta after its TMA boxes\n"
              "# instead of before them (the boxes' proxy fence no longer waits for them).")
