"""Write candidates/scalar_gated_delta/v46a_fourbuf.py and v46b_fourbuf_onewait.py from v43_wsg.py (session 22).
probe46 (session 22, call 1) read the medium chunk as the load warp's wait: the prep warps cannot start chunk c+1
until its inputs land, ~2,100 cycles into a ~3,750-cycle chunk, although they were issued a chunk earlier. At D = 64
shared memory has room for a fourth input buffer, so the load warp runs three chunks ahead instead of two
(NBUF = 4, LA = 3). v46b adds v39a's consumer cut at D = 64 (Q S0 in one wgmma group, one wait fewer a chunk,
registers 152 / 120). D = 128 is v43's code (three buffers)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"


def sub(src, old, new):
    assert src.count(old) == 1, (old[:120], src.count(old))
    return src.replace(old, new)


def four_buffers(src):
    """v43's source with NBUF input buffers (4 at D = 64): the load warp NBUF - 1 chunks ahead."""
    src = sub(src, "  static constexpr int NLW = 1;                     // load warps, the last ones\n",
              "  static constexpr int NLW = 1;                     // load warps, the last ones\n"
              "  static constexpr int NBUF = DP == 64 ? 4 : 3;     // input buffers; the load warp runs NBUF - 1 chunks ahead\n")
    src = sub(src, "  static constexpr int QL = 3 * BUF;                // q lo, 2 chunks\n",
              "  static constexpr int QL = NBUF * BUF;             // q lo, 2 chunks\n")
    src = sub(src, "  const float* buf = sm + (c % 3) * W::BUF;\n", "  const float* buf = sm + (c % W::NBUF) * W::BUF;\n")
    src = sub(src, "  float* buf = sm + (c % 3) * W::BUF;\n", "  float* buf = sm + (c % W::NBUF) * W::BUF;\n")
    src = sub(src, "    const float* cur = sm + (ch % 3) * W::BUF;\n", "    const float* cur = sm + (ch % W::NBUF) * W::BUF;\n")
    src = sub(src, """      __pipeline_commit();
      if (nchunks > 1) wsg_load<DP>(sm + W::BUF, q, k, v, gate, beta, b, h, T, H, C, min(C, T - C), lt);
      __pipeline_commit();
      __pipeline_wait_prior(1);
""", """      __pipeline_commit();
#pragma unroll
      for (int a = 1; a < W::NBUF - 1; ++a) {  // chunks 1 .. NBUF - 2, a group each
        if (a < nchunks) wsg_load<DP>(sm + a * W::BUF, q, k, v, gate, beta, b, h, T, H, a * C, min(C, T - a * C), lt);
        __pipeline_commit();
      }
      __pipeline_wait_prior(W::NBUF - 2);  // chunk 0 landed
""")
    src = sub(src, """        if (loader) __pipeline_wait_prior(0);
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
        if (loader) {
          // chunk c+2 into chunk c-1's buffer, free since the last CTA barrier
          const int t2 = (ch + 2) * C;
          if (ch + 2 < nchunks)
            wsg_load<DP>(sm + ((ch + 2) % 3) * W::BUF, q, k, v, gate, beta, b, h, T, H, t2, min(C, T - t2), lt);
""", """        if (loader) __pipeline_wait_prior(W::NBUF - 3);  // chunk c+1 landed (the newer groups may not have)
        producer_sync<W::NPROD>();  // chunk c+1's inputs visible
        if (loader) {
          // chunk c + NBUF - 1 into chunk c-1's buffer, free since the last CTA barrier
          const int ca = ch + W::NBUF - 1, t2 = ca * C;
          if (ca < nchunks)
            wsg_load<DP>(sm + (ca % W::NBUF) * W::BUF, q, k, v, gate, beta, b, h, T, H, t2, min(C, T - t2), lt);
""")
    return src


def make(stem, onewait, what):
    src = (P / "v43_wsg.py").read_text()
    src = four_buffers(src)
    if onewait:
        src = sub(src, "  static constexpr int REG_C = DP == 128 ? 168 : 0;", "  static constexpr int REG_C = DP == 128 ? 168 : 152;")
        src = sub(src, "  static constexpr int REG_P = DP == 128 ? 88 : 0;", "  static constexpr int REG_P = DP == 128 ? 88 : 120;")
        src = sub(src, "  static constexpr int QG = 4;                       // k steps of Q S0 a wgmma group (one wait each)",
                  "  static constexpr int QG = DP == 64 ? 8 : 4;        // k steps of Q S0 a wgmma group (one wait each)")
    tag = stem.split("_")[0]
    src = src.replace("sgd_v43_forward", f"sgd_{tag}_forward").replace('name="sgd_v43_wsg",', f'name="sgd_{stem}",')
    src = f"# {stem}: v43_wsg (below) with, at D = 64, {what}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


if __name__ == "__main__":
    make("v46a_fourbuf", False, "four input buffers, the load warp three chunks ahead")
    make("v46b_fourbuf_onewait", True, "four input buffers, the load warp three chunks ahead, and Q S0 in one wgmma group\n# (one wait fewer a chunk; registers 152 / 120 by setmaxnreg)")
