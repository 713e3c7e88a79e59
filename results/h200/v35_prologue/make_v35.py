"""Write v35 variants of candidates/scalar_gated_delta/v29a_wsg.py (gd_wsg_kernel's prologue and last chunk):
- v35a_prologue: chunk 0's inputs are loaded by the consumer warps (idle until chunk 0 is prepared) while the load
  warp issues chunk 1 beside them; v29a's load warp issued chunk 0, then chunk 1, and only then waited for chunk 0.
- v35b_prologue_tail: v35a, and the last chunk skips K^T Vt and the state update (nothing reads that state)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

LOAD_OLD = """template <int DP>
__device__ __forceinline__ void wsg_load(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                         const float* __restrict__ v, const float* __restrict__ gate,
                                         const float* __restrict__ beta, int b, int h, int T, int H, int t0, int n,
                                         int lt) {
  using W = WsgCfg<DP>;
  constexpr int NL = 32 * W::NLW, R4 = DP / 4;  // float4 columns a row
"""
LOAD_NEW = """template <int DP, int NL = 32 * WsgCfg<DP>::NLW>
__device__ __forceinline__ void wsg_load(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                         const float* __restrict__ v, const float* __restrict__ gate,
                                         const float* __restrict__ beta, int b, int h, int T, int H, int t0, int n,
                                         int lt) {
  using W = WsgCfg<DP>;
  constexpr int R4 = DP / 4;  // float4 columns a row
"""
PRO_OLD = """    if (loader) {
      wsg_load<DP>(sm, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), lt);
      __pipeline_commit();
      if (nchunks > 1) wsg_load<DP>(sm + W::BUF, q, k, v, gate, beta, b, h, T, H, C, min(C, T - C), lt);
      __pipeline_commit();
      __pipeline_wait_prior(1);
    }
    producer_sync<W::NPROD>();  // chunk 0's inputs visible to the prep warps
"""
PRO_NEW = """    if (loader) {
      // chunk 1 beside chunk 0, which the consumer warps load (they are idle until it is prepared)
      if (nchunks > 1) wsg_load<DP>(sm + W::BUF, q, k, v, gate, beta, b, h, T, H, C, min(C, T - C), lt);
      __pipeline_commit();
    }
    cta_sync();  // chunk 0's inputs visible to the prep warps
"""
CON_OLD = """    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
"""
CON_NEW = """    for (int e = 0; e < 4; ++e) S[kk][e] = 0.f;
  wsg_load<DP, 32 * W::NCW>(sm, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), tid);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  cta_sync();  // chunk 0's inputs visible to the prep warps
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
"""
TAIL_OLD_HEAD = """      // ---- S^T = G_C (S^T + Vt^T K): a fresh 64 x 64 accumulator for each 64-column block, 4 k steps x 3
      // wgmma m64n64k8 each.
"""
TAIL_NEW_HEAD = """      // ---- S^T = G_C (S^T + Vt^T K): a fresh 64 x 64 accumulator for each 64-column block, 4 k steps x 3
      // wgmma m64n64k8 each. Not after the last chunk: nothing reads that state.
      if (ch + 1 < nchunks) {
"""
TAIL_OLD_END = """          for (int e = 0; e < 4; ++e) S[8 * a + kk][e] = (S[8 * a + kk][e] + acc[a][kk][e]) * GC;
    } else {
      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k likewise from K^T).
      const float* gsm = cur + W::GR;"""
TAIL_NEW_END = """          for (int e = 0; e < 4; ++e) S[8 * a + kk][e] = (S[8 * a + kk][e] + acc[a][kk][e]) * GC;
      }
    } else {
      // Safe path: the plain fp32 recurrence on the exact inputs (q = hi + (lo - half ulp), k likewise from K^T).
      const float* gsm = cur + W::GR;"""

NOTE = {"v35a_prologue": "chunk 0 loaded by the consumer warps beside chunk 1",
        "v35b_prologue_tail": "v35a's prologue and no state update after the last chunk"}
for stem in ("v35a_prologue", "v35b_prologue_tail"):
    src = (P / "v29a_wsg.py").read_text()
    subs = [(LOAD_OLD, LOAD_NEW), (PRO_OLD, PRO_NEW), (CON_OLD, CON_NEW)]
    for old, new in subs:
        assert src.count(old) == 1, (stem, old[:80])
        src = src.replace(old, new)
    if stem.startswith("v35b"):
        # the K^T Vt block, indented one level into its new branch
        i, j = src.index(TAIL_OLD_HEAD), src.index(TAIL_OLD_END)
        body = src[i + len(TAIL_OLD_HEAD):j] + TAIL_OLD_END.split("\n")[0] + "\n"
        body = "".join(("  " + line if line.strip() and not line.startswith("#") else line) for line in body.splitlines(True))
        assert src.count(TAIL_OLD_HEAD) == 1 and src.count(TAIL_OLD_END) == 1
        src = src[:i] + TAIL_NEW_HEAD + body + TAIL_NEW_END.split("\n", 1)[1] + src[j + len(TAIL_OLD_END):]
    tag = stem.split("_")[0]
    src = src.replace("sgd_v29a_forward", f"sgd_{tag}_forward").replace('name="sgd_v29a_wsg",', f'name="sgd_{stem}",')
    assert f'name="sgd_{stem}"' in src
    src = f"# {stem}: v29a_wsg (below) with {NOTE[stem]}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")
