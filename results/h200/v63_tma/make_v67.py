"""Write .gpu/v67_iter.py from .gpu/v64_avt.py (make_v64.py; session 27, written and compiled locally after the
session's device time was spent: NOT RUN on a GPU). A static SASS count of v64's consumer path (1,122 instructions a
warp a chunk) shows ~150 uniform-datapath instructions rebuilding each wgmma descriptor from its address (~13 a k
step) and ~106 integer instructions recomputing the v tile's swizzled offsets every chunk. v67: each consumer descriptor
built once a chunk and advanced by compile-time constants (`wg_desc_at`: the start address field is in 16-byte
units and stays below 2^14 in 227 KB of shared memory, so the add never carries into the next field), and the v
tile's four per-thread base offsets (for s = 8 ks + tig the swizzle's XOR term is the same at every ks) computed
once, so each load takes an immediate offset. Same arithmetic as v64: bitwise v64 is the check."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v64_avt.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v64_avt: v63b_tma (below)", """# v67_iter: v64_avt (below) with wgmma descriptors advanced by constants and the v tile's offsets hoisted.
# v64_avt: v63b_tma (below)""")
sub("""__device__ __forceinline__ void wg_fence() {""", """// A descriptor for p + off floats from p's (off a multiple of 4, p + off inside shared memory): the start address
// field, in 16-byte units, stays below 2^14, so the add never reaches the offsets above it.
__device__ __forceinline__ uint64_t wg_desc_at(uint64_t d, int off) { return d + (uint64_t)(off >> 2); }

__device__ __forceinline__ void wg_fence() {""")
# (the prep's A keeps v64's descriptors: hoisting its four bases spilled 172 bytes on the 88-register producers)
# consumers' A Vt
sub("""#pragma unroll
  for (int m = 0; m < 2; ++m) {  // steps 16 m ..: 128 halves
    const uint64_t dh = wg_desc(ah + 64 * m, 128, 512), dl = wg_desc(al + 64 * m, 128, 512);""",
    """  const uint64_t bh = wg_desc(ah, 128, 512), bl = wg_desc(al, 128, 512);
#pragma unroll
  for (int m = 0; m < 2; ++m) {  // steps 16 m ..: 128 halves
    const uint64_t dh = wg_desc_at(bh, 64 * m), dl = wg_desc_at(bl, 64 * m);""")
# consumers' Q S0
sub("""            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);
            const uint64_t dl = wg_desc(reinterpret_cast<const float*>(ql) + 64 * kk, 128, 2048);""",
    """            const uint64_t dh = wg_desc_at(bqh, 64 * kk), dl = wg_desc_at(bql, 64 * kk);""")
sub("""        const uint32_t* qh = reinterpret_cast<const uint32_t*>(sm + W::QH + nb * W::H16);
        const uint32_t* ql = reinterpret_cast<const uint32_t*>(sm + W::QL + nb * W::H16);
        float m0 = 0.f, m1 = 0.f;""", """        const uint64_t bqh = wg_desc(sm + W::QH + nb * W::H16, 128, 2048);
        const uint64_t bql = wg_desc(sm + W::QL + nb * W::H16, 128, 2048);
        float m0 = 0.f, m1 = 0.f;""", count=1)
# consumers' K^T Vt
sub("""          const uint64_t dh = wg_desc(kh + 1024 * a + 64 * m, 128, 512);
          const uint64_t dl = wg_desc(kl + 1024 * a + 64 * m, 128, 512);""",
    """          const uint64_t dh = wg_desc_at(bkh, 1024 * a + 64 * m), dl = wg_desc_at(bkl, 1024 * a + 64 * m);""")
sub("""      const float* kh = sm + W::KH + nb * W::H16;
      const float* kl = sm + W::KL + nb * W::H16;
      float acc[2][8][4];""", """      const uint64_t bkh = wg_desc(sm + W::KH + nb * W::H16, 128, 512);
      const uint64_t bkl = wg_desc(sm + W::KL + nb * W::H16, 128, 512);
      float acc[2][8][4];""")
# the v tile's offsets: four bases a thread
sub("""__device__ __forceinline__ void wsh_vt_pieces(uint32_t (&wh)[2][4], uint32_t (&wl)[2][4], float& iv0, float& iv1,
                                              const float* vt, const float* bs, int j0, int tig) {
  float x[4][4];
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int s0 = 8 * ks + tig;
    const float ca = bs[s0];
    const float cb = bs[s0 + 4];
    x[ks][0] = vt[wsh_toff(s0, j0)] * ca;
    x[ks][1] = vt[wsh_toff(s0, j0 + 8)] * ca;
    x[ks][2] = vt[wsh_toff(s0 + 4, j0)] * cb;
    x[ks][3] = vt[wsh_toff(s0 + 4, j0 + 8)] * cb;""", """__device__ __forceinline__ void wsh_vt_pieces(uint32_t (&wh)[2][4], uint32_t (&wl)[2][4], float& iv0, float& iv1,
                                              const float* vt, const float* bs, const int (&vo)[4], int tig) {
  float x[4][4];
  float m0 = 0.f, m1 = 0.f;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {  // wsh_toff(8 ks + tig (+ 4), j0 (+ 8)) = vo[..] + 256 ks
    const int s0 = 8 * ks + tig;
    const float ca = bs[s0];
    const float cb = bs[s0 + 4];
    x[ks][0] = vt[vo[0] + 256 * ks] * ca;
    x[ks][1] = vt[vo[1] + 256 * ks] * ca;
    x[ks][2] = vt[vo[2] + 256 * ks] * cb;
    x[ks][3] = vt[vo[3] + 256 * ks] * cb;""")
sub("""      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, j0, tig);""",
    """      wsh_vt_pieces(wh, wl, iv0, iv1, vsm, cur + W::BR, vo, tig);""")
sub("""  float P = 1.f;""" if False else """  // S^T in the wgmma accumulator layout: S[n] holds (j0, i), (j0, i + 1), (j0 + 8, i), (j0 + 8, i + 1), i = 8 n + 2 tig.
  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + W::GB""", """  // S^T in the wgmma accumulator layout: S[n] holds (j0, i), (j0, i + 1), (j0 + 8, i), (j0 + 8, i + 1), i = 8 n + 2 tig.
  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.f;
  const int vo[4] = {wsh_toff(tig, j0), wsh_toff(tig, j0 + 8), wsh_toff(tig + 4, j0), wsh_toff(tig + 4, j0 + 8)};
  cta_sync();
  for (int ch = 0; ch < nchunks; ++ch) {
    const int t0 = ch * C;
    const int n = min(C, T - t0);
    const int nb = ch & 1;
    const float* cur = sm + W::GB""")
src = src.replace('name="sgd_v64_avt"', 'name="sgd_v67_iter"').replace("sgd_v64_forward", "sgd_v67_forward")
(ROOT / ".gpu/v67_iter.py").write_text(src)
print("wrote .gpu/v67_iter.py")
