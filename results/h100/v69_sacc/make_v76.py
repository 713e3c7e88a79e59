"""Write .gpu/v76a_gbearly.py and .gpu/v76b_tma5d.py from .gpu/v74_async.py (session 36; make_v74.py writes v74).

probe76 (call 14) found that probe74's marks time a different kernel: a global store right before the prep's
round-one proxy fence stretches v69's chunk from 7,131 cycles (consumer marks only, "bare") to 8,814 ("lean"), and
the 1,000-1,500-cycle "vote" waits that v75 was built on were mostly the probe's. With the prep's marks held in
registers ("reg", 7,345 for v69) the picture is: v69's chunk is the consumers' (6,860 cycles top to arrival, 271 at
the barrier, bare); v74's consumers take ~5,100 and wait ~1,950, so v74's chunk (7,085, bare) is the prep's chain:
prep warpgroup 0 waits 752 cycles at its loop top (v69: 154), splits for ~2,400-2,760 (round one), waits
~1,460-1,800 at the vote for warp 15 (whose round one starts after it issues chunk c+2's 12 TMA boxes: 1,466
cycles), and builds A for ~1,740.

- v76a_gbearly: the issuer's load of chunk c+2's gate and beta moves from after prepare(c+1) to right after it
  stores chunk c+1's (loop top). In v74 warp 15 reaches the CTA barrier ~500 cycles before it releases, so the load
  had ~700 cycles before the next loop top stored it, and the 752-cycle wait there is (by this reading) that load's
  latency; moved, it has a whole chunk. The round-one fence ~4,000 cycles later finds it done.
- v76b_tma5d: v76a with q, k and v each loaded by one 16 KB TMA box a chunk (a 5D tensor map (32, T, 4, H, B):
  the 4 column blocks as a dimension of stride 128 bytes, box (32, 32, 4, 1, 1)) instead of four 4 KB boxes: the
  same bytes in the same swizzled layout (box g at 4 KB g, rows of 128 bytes, the swizzle's row index t mod 8),
  3 instructions from lane 0 instead of 12. Tells whether the 1,466 cycles are per instruction or per byte.
- v76c_gbtmaqk: v75b_tmaqk (make_v75.py: v74 with q's and k's boxes issued by warpgroup 1 after the vote and after
  its round two, v's four at the loop top) with v76a's change: the other way to take the issue off the vote's path.

Both add marks 8 (after the gate store) and 9 (after the TMA wait) for probe76's reg mode. No operation on data
changes: y is bitwise v74's, which is bitwise v69's.
Before: make_v74.py, then make_v75.py (v75b). Predictions (written before the run): v76a's loop-top wait 752 -> ~150-250 cycles, chunk (bare) 7,085 -> ~6,550,
the prep still setting it; large 523-532 (v74 in calls 4, 9) -> ~490-500 µs on an H100. v76b: if the issue is per
instruction, warp 15's TMA issue 1,466 -> ~400 and the vote's wait down by ~1,000, the chunk then ~5,500-5,800 (the
consumers' ~5,100 plus the barrier): ~410-440 µs; if per byte, as v76a."""
from pathlib import Path

from variant import write_variant

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())


def build(name: str, tma5d: bool, base: str = "v74_async"):
    src = (ROOT / ".gpu" / f"{base}.py").read_text()

    def sub(old, new, count=1):
        nonlocal src
        assert src.count(old) == count, (name, old[:200], src.count(old))
        src = src.replace(old, new)

    sub("""        if (issuer) wsh_gb_store(sm, ch + 1, gn, bn, lane);
        wsh_wait_chunk(sm, ch + 1);
""", """        if (issuer) {
          wsh_gb_store(sm, ch + 1, gn, bn, lane);
          // chunk c + 2's gate and beta a whole chunk before they are stored (the round-one fence comes ~4,000
          // cycles after this load; it waits for the thread's outstanding loads)
          if (ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
        }
        WSH_MARK(8, ch + 1);
        wsh_wait_chunk(sm, ch + 1);
        WSH_MARK(9, ch + 1);
""")
    sub("""        // chunk c + 2's gate and beta after the prep's fences (each waits for this thread's outstanding loads)
        if (issuer && ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
""", "")
    line = f"# {name}: {base} (below) with chunk c+2's gate and beta loaded at the prep's loop top, a chunk before they are stored"
    if tma5d:
        sub("""__device__ __forceinline__ void tma_box(float* dst, const CUtensorMap* map, int d0, int h, int t0, int b, uint64_t* m) {""",
            """// A chunk of one tensor (128 columns x 32 steps of one head) as one box of wsh_map's 5D view; box g of the 4D
// view's layout at 4 KB g.
__device__ __forceinline__ void tma_tile(float* dst, const CUtensorMap* map, int h, int t0, int b, uint64_t* m) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], "
      "[%7];" ::"r"(sm_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(0), "r"(t0), "r"(0), "r"(h), "r"(b), "r"(sm_addr(m))
      : "memory");
}
__device__ __forceinline__ void tma_box(float* dst, const CUtensorMap* map, int d0, int h, int t0, int b, uint64_t* m) {""")
        sub("""  const int t0 = ca * W::C;
#pragma unroll
  for (int cb = 0; cb < 4; ++cb) {
    tma_box(qd + cb * 1024, tq, 32 * cb, h, t0, b, m);
    tma_box(kd + cb * 1024, tk, 32 * cb, h, t0, b, m);
    tma_box(vd + cb * 1024, tv, 32 * cb, h, t0, b, m);
  }
}""", """  const int t0 = ca * W::C;
  tma_tile(qd, tq, h, t0, b, m);
  tma_tile(kd, tk, h, t0, b, m);
  tma_tile(vd, tv, h, t0, b, m);
}""")
        sub("""// A (B, T, H, 128) fp32 tensor as TMA boxes of 32 columns x 32 steps of one head, 128-byte swizzle.
CUtensorMap wsh_map(const torch::Tensor& x, int B, int T, int H) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {128, (cuuint64_t)H, (cuuint64_t)T, (cuuint64_t)B};
  const cuuint64_t strides[3] = {128 * 4, (cuuint64_t)H * 512, (cuuint64_t)T * H * 512};
  const cuuint32_t box[4] = {32, 1, 32, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, x.data_ptr<float>(), dims, strides,""",
            """// A (B, T, H, 128) fp32 tensor viewed as (32 columns, T, 4 column blocks, H, B), so that one box (32, 32, 4, 1, 1)
// lands a chunk of one head as four blocks of 32 columns x 32 steps, 4 KB apart, 128-byte swizzle.
CUtensorMap wsh_map(const torch::Tensor& x, int B, int T, int H) {
  CUtensorMap m;
  const cuuint64_t dims[5] = {32, (cuuint64_t)T, 4, (cuuint64_t)H, (cuuint64_t)B};
  const cuuint64_t strides[4] = {(cuuint64_t)H * 512, 128, 512, (cuuint64_t)T * H * 512};
  const cuuint32_t box[5] = {32, 32, 4, 1, 1};
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 5, x.data_ptr<float>(), dims, strides,""")
        line = (f"# {name}: v74_async (below) with chunk c+2's gate and beta loaded at the prep's loop top, and q, k, v by one\n"
                f"# TMA box each a chunk (a 5D tensor map) instead of four")
    write_variant(src, base, name, line)


build("v76a_gbearly", tma5d=False)
build("v76b_tma5d", tma5d=True)
build("v76c_gbtmaqk", tma5d=False, base="v75b_tmaqk")
