"""Write .gpu/v72_bfqs.py from candidates/scalar_gated_delta/v69_sacc.py (session 31).

v69's consumers split their state into fp16 pieces every chunk: the row maxima (64 FMNMX and four shuffles a
thread), a power-of-two scale that puts each row in fp16's range (64 FMUL), then hi = fp16(x), lo = fp16(x - hi)
(F2FP, HADD2 back to fp32, FADD): ~320 instructions a consumer thread a chunk, a third of the thread's work.
v72 runs Q S0 on bf16 pieces instead: bf16 keeps fp32's exponent range, so the state needs no maximum and no scale,
and the split is F2FP, a shift or mask back to fp32, FADD, F2FP: ~192. q's pieces (Q S0's B operand, and A's)
become bf16 too, unscaled (the prep's q split drops its maximum and scale), and with them A = Q K^T's k pieces
(the k split keeps its maximum, which K^T Vt's chunk scale needs). K^T Vt, A' and A Vt stay on fp16 pieces.

Precision: bf16 hi + lo keep 16 significant bits, rounded (|x - hi - lo| <= 2^-18 |x|), and the dropped lo lo
term is ~2^-18 of a product: ~3e-6 of a dot product's RMS, ~0.03 of the tolerance (1e-4) per element, where
fp16's pieces gave ~2^-22.

v69 used the state's row maxima also to decide when a row's R' (= S / f, before K^T Vt adds the chunk's
increment) would pass 2^100 and the increment is dropped. v72 keeps a bound per row instead: |R_new| <= |R'| +
2^36 (the increment is a sum of 32 products of pieces below 2^15 each), and computes the exact maxima only in a
chunk where the bound says a drop may happen (a warp vote), so every drop is decided on v69's numbers. The safe
path sets the bound to the float maximum (the next chunk then takes the exact maxima).

The combine: Q S0 = (Q R) lam 2^le, the factor in two halves each within the float range."""
from pathlib import Path

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())
src = (ROOT / "candidates/scalar_gated_delta/v69_sacc.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v69_sacc: v68c_both (below)",
    "# v72_bfqs: v69_sacc (below) with Q S0 and A = Q K^T on bf16 pieces: the consumers' state split needs no row\n"
    "# maxima and no scale (a bound per row decides when they are needed), q's split no scale.\n"
    "# v69_sacc: v68c_both (below)")
sub("#include <cuda_fp16.h>\n", "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n")

# ---- bf16 split and wgmma
sub("""// d (64 x 32 per warpgroup) += a (64 x 16 fp16, registers) * b (16 x 32 fp16, shared memory, K-major).
__device__ __forceinline__ void wh_mma_n32(""",
    """// x0, x1 into bf16 pieces packed in pairs (x0 in the low half): hi = bf16(x), lo = bf16(x - hi). bf16 has fp32's
// exponent range, so no scale.
__device__ __forceinline__ void split_b2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const uint32_t hb = *reinterpret_cast<const uint32_t*>(&h);
  const __nv_bfloat162 l = __floats2bfloat162_rn(x0 - __uint_as_float(hb << 16), x1 - __uint_as_float(hb & 0xffff0000u));
  hi = hb;
  lo = *reinterpret_cast<const uint32_t*>(&l);
}

// d (64 x 32 per warpgroup) += a (64 x 16 bf16, registers) * b (16 x 32 bf16, shared memory, K-major).
__device__ __forceinline__ void wb_mma_n32(float (&d)[4][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1, 0;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// A (64 x 32 per warpgroup) += q (64 x 16 bf16, shared memory) * K^T (16 x 32 bf16, shared memory), both K-major.
__device__ __forceinline__ void wb_mma_ss_n32(float (&d)[4][4], uint64_t ad, uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1, 0, 0;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "l"(ad), "l"(bd));
}

// d (64 x 32 per warpgroup) += a (64 x 16 fp16, registers) * b (16 x 32 fp16, shared memory, K-major).
__device__ __forceinline__ void wh_mma_n32(""")

# ---- A = Q K^T on bf16 pieces, unscaled q and k
sub("""    wh_mma_ss_n32(a, dq, dkl);
    wh_mma_ss_n32(a, dq, dkh);""", """    wb_mma_ss_n32(a, dq, dkl);
    wb_mma_ss_n32(a, dq, dkh);""")
sub("""  const float* rq = sm + W::RQ + nb * C;
  const float* rk = sm + W::RKA + nb * C;
  const float* rgs""", """  const float* rgs""")
sub("  const float r0 = rq[t] * gs[t];  // q's unscaling and G_t", "  const float r0 = gs[t];  // G_t (q and k unscaled)")
sub("""    const float2 c = *reinterpret_cast<const float2*>(rk + s);
    const float2 rg = *reinterpret_cast<const float2*>(rgs + s);
    const float cx = c.x * rg.x, cy = c.y * rg.y;""", """    const float2 rg = *reinterpret_cast<const float2*>(rgs + s);
    const float cx = rg.x, cy = rg.y;""")

# ---- the prep's split of q (and of k for A): bf16 pieces, no scale; k keeps its maximum (K^T Vt's chunk scale)
sub("""// Steps 8 tb .. 8 tb + 7 of q or k (one warp, a raw tile) into hi / lo pieces by step, each step under its own
// scale; 1 / scale into rq.""", """// Steps 8 tb .. 8 tb + 7 of q or k (one warp, a raw tile) into bf16 hi / lo pieces, unscaled (RQ and RKA unused).
//""")
sub("""__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, float* rq, int tb, int lane,
                                             float rg = 1.f) {""",
    """__device__ __forceinline__ float wsh_split_q(const float* xr, uint32_t* qh, uint32_t* ql, int tb, int lane,
                                             float rg = 1.f) {""")
sub("""    x[u] = *reinterpret_cast<const float4*>(xr + wsh_toff(t, 4 * (g + 4 * u)));
    m = fmaxf(m, fmaxf(fmaxf(fabsf(x[u].x), fabsf(x[u].y)), fmaxf(fabsf(x[u].z), fabsf(x[u].w))));
  }
  m = fmaxf(m, __shfl_xor_sync(kFull, m, 8));
  m = fmaxf(m, __shfl_xor_sync(kFull, m, 16));
  float sc, inv;
  pow2_scale(m, sc, inv);
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    uint32_t h0, h1, l0, l1;
    split_h2(x[u].x * sc, x[u].y * sc, h0, l0);
    split_h2(x[u].z * sc, x[u].w * sc, h1, l1);""", """    x[u] = *reinterpret_cast<const float4*>(xr + wsh_toff(t, 4 * (g + 4 * u)));
    if (WMAX) m = fmaxf(m, fmaxf(fmaxf(fabsf(x[u].x), fabsf(x[u].y)), fmaxf(fabsf(x[u].z), fabsf(x[u].w))));
  }
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    uint32_t h0, h1, l0, l1;
    split_b2(x[u].x, x[u].y, h0, l0);
    split_b2(x[u].z, x[u].w, h1, l1);""")
sub("""  if (g == 0) rq[t] = inv;
  if (WMAX) {  // the largest |x_t| / G_t over the block (rg: this lane's row's 1 / G_t)
    m *= rg;""", """  if (WMAX) {  // the largest |x_t| / G_t over the block (rg: this lane's row's 1 / G_t)
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 8));
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 16));
    m *= rg;""")
sub("""reinterpret_cast<uint32_t*>(sm + W::QH + (2 * nb + 1) * W::H16), sm + W::RQ + nb * C, pw, lane);""",
    """reinterpret_cast<uint32_t*>(sm + W::QH + (2 * nb + 1) * W::H16), pw, lane);""")
sub("""reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16), sm + W::RKA + nb * C,
""", """reinterpret_cast<uint32_t*>(sm + W::KAL + nb * W::H16),
""")

# ---- consumers: the bound, Q S0 on bf16 pieces of R itself, the combine
sub("  float lam0 = 1.f, lam1 = 1.f;  // rows j0, j0 + 8: S = lam 2^le R, R held in S[][][]\n",
    "  float lam0 = 1.f, lam1 = 1.f;  // rows j0, j0 + 8: S = lam 2^le R, R held in S[][][]\n"
    "  float br0 = 0.f, br1 = 0.f;  // bounds on the rows' largest |R|\n")
old_top = src[src.index("      float mr0 = 0.f, mr1 = 0.f;  // the rows' largest |S| / 2^le (chunk 0: S is zero)"):
              src.index("        // Four groups of two k steps, the pieces in two register buffers")]
sub(old_top, """      float mr0 = br0 * lam0, mr1 = br1 * lam1;  // bounds on the rows' largest |S| / 2^le (chunk 0: S is zero)
      if (ch > 0) {  // chunk 0: S is zero
        const uint64_t bqh = wg_desc(sm + W::QH + 2 * nb * W::H16, 128, 2048);
        const uint64_t bql = wg_desc(sm + W::QH + (2 * nb + 1) * W::H16, 128, 2048);
""")
for r in ("(2 * kk)", "(2 * kk + 1)"):
    for e0, e1, s, reg in (("0", "1", "s0", 0 if r == "(2 * kk)" else 2), ("2", "3", "s1", 1 if r == "(2 * kk)" else 3)):
        sub(f"split_h2(S[{r} >> 3][{r} & 7][{e0}] * {s}, S[{r} >> 3][{r} & 7][{e1}] * {s}, ah[bf][u][{reg}], al[bf][u][{reg}]);",
            f"split_b2(S[{r} >> 3][{r} & 7][{e0}], S[{r} >> 3][{r} & 7][{e1}], ah[bf][u][{reg}], al[bf][u][{reg}]);")
sub("""            wh_mma_n32(O, al[bf][u], dh);
            wh_mma_n32(O, ah[bf][u], dl);
            wh_mma_n32(O, ah[bf][u], dh);""", """            wb_mma_n32(O, al[bf][u], dh);
            wb_mma_n32(O, ah[bf][u], dl);
            wb_mma_n32(O, ah[bf][u], dh);""")
sub("""        // y_t = G_t (Q S0)_t + (A' Vt'')_t
        const float* rq = sm + W::RQ + nb * C;
        const float* ra = sm + W::RA + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 r = *reinterpret_cast<const float2*>(rq + 8 * nt + 2 * tig);
          const float2 p = *reinterpret_cast<const float2*>(ra + 8 * nt + 2 * tig);
          O[nt][0] = fmaf(P[nt][0], iv0 * p.x, O[nt][0] * (inv0 * r.x) * gy[nt][0]);
          O[nt][1] = fmaf(P[nt][1], iv0 * p.y, O[nt][1] * (inv0 * r.y) * gy[nt][1]);
          O[nt][2] = fmaf(P[nt][2], iv1 * p.x, O[nt][2] * (inv1 * r.x) * gy[nt][0]);
          O[nt][3] = fmaf(P[nt][3], iv1 * p.y, O[nt][3] * (inv1 * r.y) * gy[nt][1]);
        }""", """        // y_t = G_t (Q S0)_t + (A' Vt'')_t, Q S0 = (Q R) lam 2^le: the factor in two halves, each a normal float
        // while lam 2^le is above 2^-252 (below it, (Q R) lam 2^le is below the float range)
        const int ex0 = exp_of(lam0) + le0, ex1 = exp_of(lam1) + le1;
        const float fa0 = ldexp_sat(lam0, le0 - ex0 / 2), fb0 = ldexp_sat(1.f, ex0 / 2);
        const float fa1 = ldexp_sat(lam1, le1 - ex1 / 2), fb1 = ldexp_sat(1.f, ex1 / 2);
        const float* ra = sm + W::RA + nb * C;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const float2 p = *reinterpret_cast<const float2*>(ra + 8 * nt + 2 * tig);
          O[nt][0] = fmaf(P[nt][0], iv0 * p.x, O[nt][0] * fa0 * (fb0 * gy[nt][0]));
          O[nt][1] = fmaf(P[nt][1], iv0 * p.y, O[nt][1] * fa0 * (fb0 * gy[nt][1]));
          O[nt][2] = fmaf(P[nt][2], iv1 * p.x, O[nt][2] * fa1 * (fb1 * gy[nt][0]));
          O[nt][3] = fmaf(P[nt][3], iv1 * p.y, O[nt][3] * fa1 * (fb1 * gy[nt][1]));
        }""")
# the drop: decided on the exact maxima whenever the bound allows one
sub("""        const int em0 = exp_of(mr0), em1 = exp_of(mr1);
        const bool drop0""", """        if (__any_sync(kFull, (mr0 > 0.f && exp_of(mr0) + d0 > 100) || (mr1 > 0.f && exp_of(mr1) + d1 > 100))) {
          float m0 = 0.f, m1 = 0.f;  // v69's maxima: R is unchanged since Q S0's split
#pragma unroll
          for (int i = 0; i < 16; ++i) {
            m0 = fmaxf(m0, fmaxf(fabsf(S[(i) >> 3][(i) & 7][0]), fabsf(S[(i) >> 3][(i) & 7][1])));
            m1 = fmaxf(m1, fmaxf(fabsf(S[(i) >> 3][(i) & 7][2]), fabsf(S[(i) >> 3][(i) & 7][3])));
          }
          m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 1));
          m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 1));
          m0 = fmaxf(m0, __shfl_xor_sync(kFull, m0, 2));
          m1 = fmaxf(m1, __shfl_xor_sync(kFull, m1, 2));
          mr0 = m0 * lam0;
          mr1 = m1 * lam1;
        }
        const int em0 = exp_of(mr0), em1 = exp_of(mr1);
        const bool drop0""")
sub("""        const float g0 = ldexp_sat(lam0, d0), g1 = ldexp_sat(lam1, d1);
""", """        const float g0 = ldexp_sat(lam0, d0), g1 = ldexp_sat(lam1, d1);
        // |R_new| <= |R'| + |Vt''^T K''| (32 products of pieces below 2^15: 2^35, 2^36 with the lo terms' margin)
        br0 = (mr0 > 0.f ? ldexp_sat(mr0, d0) : 0.f) + (drop0 ? 0.f : 68719476736.f);
        br1 = (mr1 > 0.f ? ldexp_sat(mr1, d1) : 0.f) + (drop1 ? 0.f : 68719476736.f);
""")
# the safe path: bf16 pieces, unscaled; R = S afterwards, its bound unknown
sub("""      const __half* qph = reinterpret_cast<const __half*>(sm + W::QH + 2 * nb * W::H16);
      const __half* qpl = reinterpret_cast<const __half*>(sm + W::QH + (2 * nb + 1) * W::H16);
      const __half* kph = reinterpret_cast<const __half*>(sm + W::KAH + nb * W::H16);
      const __half* kpl = reinterpret_cast<const __half*>(sm + W::KAL + nb * W::H16);
      const float* rq = sm + W::RQ + nb * C;
      const float* rka = sm + W::RKA + nb * C;
""", """      br0 = br1 = 3.0e38f;  // R = S after this chunk: the next drop check takes the exact maxima
      const __nv_bfloat16* qph = reinterpret_cast<const __nv_bfloat16*>(sm + W::QH + 2 * nb * W::H16);
      const __nv_bfloat16* qpl = reinterpret_cast<const __nv_bfloat16*>(sm + W::QH + (2 * nb + 1) * W::H16);
      const __nv_bfloat16* kph = reinterpret_cast<const __nv_bfloat16*>(sm + W::KAH + nb * W::H16);
      const __nv_bfloat16* kpl = reinterpret_cast<const __nv_bfloat16*>(sm + W::KAL + nb * W::H16);
""")
sub("""          const float2 qa = __half22float2(*reinterpret_cast<const __half2*>(qph + o));
          const float2 qb = __half22float2(*reinterpret_cast<const __half2*>(qpl + o));
          const float2 ka = __half22float2(*reinterpret_cast<const __half2*>(kph + o));
          const float2 kb = __half22float2(*reinterpret_cast<const __half2*>(kpl + o));
          const float2 qx = make_float2((qa.x + qb.x) * rq[t], (qa.y + qb.y) * rq[t]);
          const float2 kx = make_float2((ka.x + kb.x) * rka[t], (ka.y + kb.y) * rka[t]);""",
    """          const float2 qa = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(qph + o));
          const float2 qb = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(qpl + o));
          const float2 ka = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kph + o));
          const float2 kb = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kpl + o));
          const float2 qx = make_float2(qa.x + qb.x, qa.y + qb.y);
          const float2 kx = make_float2(ka.x + kb.x, ka.y + kb.y);""")

sub("1 / (q's scale) by step t, 2 chunks", "unused (v72: q's pieces unscaled)")
sub("1 / (k's scale) by step s, 2 chunks", "unused (v72: A's k pieces unscaled)")
sub("the plain fp32 recurrence on q and k as their pieces hold them (22 significant bits)",
    "the plain fp32 recurrence on q and k as their bf16 pieces hold them (16 significant bits)")
# names
sub("sgd_v69_forward", "sgd_v72_forward", count=src.count("sgd_v69_forward"))
sub('name="sgd_v69_sacc",', 'name="sgd_v72_bfqs",')
assert "v69_sacc\"" not in src
out = ROOT / ".gpu/v72_bfqs.py"
out.write_text(src)
print("wrote", out)
