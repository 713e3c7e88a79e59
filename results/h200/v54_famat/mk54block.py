"""Write wsh54_block.cu (v54's D = 128 kernel) from wsh_block.cu (v53's)."""
from pathlib import Path

HERE = Path(__file__).resolve().parent
s = (HERE / "wsh_block.cu").read_text()


def sub(old, new, cnt=1):
    global s
    assert s.count(old) == cnt, (old[:100], s.count(old))
    s = s.replace(old, new)


def between(a, b):
    i0 = s.index(a)
    return s[i0:s.index(b, i0)]


sub(between("// v53: gd_wsg_kernel", "struct WshCfg {"), """// v53 / v54: gd_wsg_kernel's roles at D = 128 with the products on fp16 wgmma (twice the TF32 rate). Each operand
// is split in two fp16 pieces, x s = hi + lo with hi = fp16(x s), lo = fp16(x s - hi), under a power-of-two scale s
// that puts the largest |x| of its scale group in [2^14, 2^15) (fp16's 11-bit significand twice: what 3xTF32 keeps,
// and fp16's exponent range only has to hold one group's spread). Scale groups are ones that factor out of the
// product: S^T and Vt^T by row j (the A operands), q by step t (a column of O^T, a row of A), k by step s for A = Q K^T
// (a column of A) and by state column i for K^T Vt (a column of its accumulator, unscaled in the update). v54: A on
// one prep warpgroup's wgmma (v53 built it with mma.sync, which waits behind the consumers' wgmma), so q and k are
// split first, behind a prep barrier; the raw q and k are read only by that split, so they need two buffers, not
// three, and the safe path reads the pieces. A Vt stays 3xTF32 on mma.sync.

""")
sub(between("struct WshCfg {", "// Offsets in halves."), (HERE / "wsh54_cfg_load.cu").read_text())
sub("""// Offsets in halves. Q^T as wgmma's B (K = i, N = t): core matrices of 8 steps x 8 columns, 128 B apart along i,
// 2 KB along t. K as""", """// Offsets in halves. q as wgmma's A (M = t, K = i) or Q^T as its B (K = i, N = t), and k likewise as K^T for
// A = Q K^T: core matrices of 8 steps x 8 columns, 128 B apart along i, 2 KB along t. K as""")
sub(between("// A = causal(Q K^T) of chunk c from the raw q and k", "// q's steps 8 tb"), (HERE / "wsh54_amat.cu").read_text())
# q split generalised to k's rows (KROWS) for A's k pieces
sub("""// q's steps 8 tb .. 8 tb + 7 (one warp) into Q^T hi / lo, each step under its own scale; 1 / scale into rq.
// Lane: step 8 tb + (lane & 7), 16-byte columns g, g + 4, ..., g + 28 (g = lane >> 3), so 8 lanes read 128
// contiguous bytes of q's blocked layout and 16 lanes write 128 contiguous bytes.
__device__ __forceinline__ void wsh_split_q(const float* qr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane) {""",
    """// q's steps 8 tb .. 8 tb + 7 (one warp) into q hi / lo, each step under its own scale; 1 / scale into rq (KROWS: k's
// steps from its rows, for A). Lane: step 8 tb + (lane & 7), 16-byte columns g, g + 4, ..., g + 28 (g = lane >> 3), so
// 8 lanes read 128 contiguous bytes of q's blocked layout (k's rows: 2-way bank conflicts) and 16 lanes write 128
// contiguous bytes.
template <bool KROWS>
__device__ __forceinline__ void wsh_split_q(const float* qr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane) {""")
sub("""    x[u] = *reinterpret_cast<const float4*>(qr + tb * 1024 + (g + 4 * u) * 32 + r * 4);""",
    """    x[u] = *reinterpret_cast<const float4*>(KROWS ? qr + t * WshCfg::DPS + 4 * (g + 4 * u)
                                                  : qr + tb * 1024 + (g + 4 * u) * 32 + r * 4);""")
sub(between("// Prep warps: the gate scan and vote;", "__global__ void __launch_bounds__(512, 1)"), (HERE / "wsh54_prepare.cu").read_text())
# producers: two buffer kinds
sub("""      wsg_load<DP>(sm, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), lane);
      __pipeline_commit();
#pragma unroll
      for (int a = 1; a < W::NBUF - 1; ++a) {
        if (a < nchunks) wsg_load<DP>(sm + a * W::BUF, q, k, v, gate, beta, b, h, T, H, a * C, min(C, T - a * C), lane);
        __pipeline_commit();
      }""", """      static_assert(W::NBUF == 3 && W::NBQK == 2, "chunks 0 and 1 first, then c + 2 during chunk c");
      wsh_load(sm, sm + W::VB, q, k, v, gate, beta, b, h, T, H, 0, min(C, T), lane);
      __pipeline_commit();
      if (1 < nchunks) wsh_load(sm + W::QKBUF, sm + W::VB + W::VBUF, q, k, v, gate, beta, b, h, T, H, C, min(C, T - C), lane);
      __pipeline_commit();""")
sub("""          const int ca = ch + W::NBUF - 1, t2 = ca * C;  // into chunk c-1's buffer, free since the last CTA barrier
          if (ca < nchunks)
            wsg_load<DP>(sm + (ca % W::NBUF) * W::BUF, q, k, v, gate, beta, b, h, T, H, t2, min(C, T - t2), lane);""",
    """          // chunk c + 2: q / k into chunk c's buffer (split during chunk c - 1), v into chunk c - 1's
          const int ca = ch + 2, t2 = ca * C;
          if (ca < nchunks)
            wsh_load(sm + (ca % W::NBQK) * W::QKBUF, sm + W::VB + (ca % W::NBUF) * W::VBUF, q, k, v, gate, beta, b, h,
                     T, H, t2, min(C, T - t2), lane);""")
# consumers: the v buffer; the safe path from the pieces
sub("""    const float* cur = sm + (ch % W::NBUF) * W::BUF;
    const float* vsm = cur + W::VR;""", """    const float* cur = sm + W::VB + (ch % W::NBUF) * W::VBUF;
    const float* vsm = cur + W::VR;""")
sub(between("      // Safe path: the plain fp32 recurrence on the raw inputs.", "      for (int t = 0; t < n; ++t) {"),
    """      // Safe path: the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits).
      const __half* qph = reinterpret_cast<const __half*>(sm + W::QH + nb * W::H16);
      const __half* qpl = reinterpret_cast<const __half*>(sm + W::QL + nb * W::H16);
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAL + nb * W::H16);
      const float* rq = sm + W::RQ + nb * C;
      const float* rka = sm + W::RKA + nb * C;
      const float* gsm = cur + W::GR;
      const float* bsm = cur + W::BR;
""")
sub("""          const float2 qx = *reinterpret_cast<const float2*>(qr + wsg_qoff<DP>(t, i));
          const float2 kx = *reinterpret_cast<const float2*>(kr + t * DPS + i);""",
    """          const int o = wsh_qoff(t, i);  // even: a pair of halves
          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + o));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + o));
          const float2 ka = __half22float2(*reinterpret_cast<const __half2*>(kph + o));
          const float2 kb = __half22float2(*reinterpret_cast<const __half2*>(kpl + o));
          const float2 qx = make_float2((qa.x + qb.x) * rq[t], (qa.y + qb.y) * rq[t]);
          const float2 kx = make_float2((ka.x + kb.x) * rka[t], (ka.y + kb.y) * rka[t]);""")
sub("""  constexpr int DP = W::DP, C = W::C, NCS = W::NCS, CS = W::CS, DPS = W::DPS;""",
    """  constexpr int DP = W::DP, C = W::C, NCS = W::NCS, CS = W::CS;""")
(HERE / "wsh54_block.cu").write_text(s)
print("wrote wsh54_block.cu")
