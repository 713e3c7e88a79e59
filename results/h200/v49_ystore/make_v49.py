"""Write candidates/scalar_gated_delta/v49a_ystore.py, v49b_ystore_fourbuf.py, v49c_ystore_asplit.py and
v49d_ystore_desc.py from v43_wsg.py (session 22, prepared, compiled here, not run). probe47 read v43's y stores at
~1,050 cycles of a 3,690-cycle medium chunk (~1,700 of 8,470 at large); in the SASS they are eight branch blocks
(`if (t < n)`), each an LDS of G_t, two FMUL and two STG, so the eight LDS round trips run one after another. v49a
loads the chunk's eight G_t values into registers before A Vt and stores a full chunk (every chunk at T = 1024 /
4096) without branches; a short last chunk keeps the guarded stores. v49b adds v46a's fourth input buffer at D = 64
(the load warp three chunks ahead), which moved the prep warps 550-1,000 cycles ahead of the consumers at medium.
v49c also has the prep warps store A split (hi, lo bits) at D = 64, so the consumers' A Vt loads instead of
splitting (20 splits a chunk fewer). v49d also forms the wgmma descriptors of Q S0 and K^T Vt as a base plus a
constant (the SASS spends ~3 uniform-datapath instructions a wgmma on them). Same arithmetic and descriptors:
outputs bitwise v43's."""
from pathlib import Path

from make_v46 import four_buffers

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"

OLD_STORES = """      // y(c) = G_t O^T, rows t < n, from registers.
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int t = 8 * nt + 2 * tig;
        if (t < n) {
          const float g = gsc[t];
          yb[t * rs + j0] = O[nt][0] * g;
          yb[t * rs + j0 + 8] = O[nt][2] * g;
        }
        if (t + 1 < n) {
          const float g = gsc[t + 1];
          yb[(t + 1) * rs + j0] = O[nt][1] * g;
          yb[(t + 1) * rs + j0 + 8] = O[nt][3] * g;
        }
      }
"""

NEW_STORES = """      // y(c) = G_t O^T from registers: a full chunk without branches (G_t loaded ahead), a short one guarded.
      if (n == C) {
        float* yr = yb + 2 * tig * rs + j0;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          yr[8 * nt * rs] = O[nt][0] * gy[nt][0];
          yr[8 * nt * rs + 8] = O[nt][2] * gy[nt][0];
          yr[(8 * nt + 1) * rs] = O[nt][1] * gy[nt][1];
          yr[(8 * nt + 1) * rs + 8] = O[nt][3] * gy[nt][1];
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int t = 8 * nt + 2 * tig;
          if (t < n) {
            yb[t * rs + j0] = O[nt][0] * gy[nt][0];
            yb[t * rs + j0 + 8] = O[nt][2] * gy[nt][0];
          }
          if (t + 1 < n) {
            yb[(t + 1) * rs + j0] = O[nt][1] * gy[nt][1];
            yb[(t + 1) * rs + j0 + 8] = O[nt][3] * gy[nt][1];
          }
        }
      }
"""

GY = """      float gy[4][2];  // G_t of this thread's y rows, loaded ahead of the stores (defined for every t < C)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        gy[nt][0] = gsc[8 * nt + 2 * tig];
        gy[nt][1] = gsc[8 * nt + 2 * tig + 1];
      }
      // + Vt^T A^T, mma.sync
"""


def sub(src, old, new):
    assert src.count(old) == 1, (old[:120], src.count(old))
    return src.replace(old, new)


def presplit_a(src):
    """At D = 64 (with four buffers: the room) the prep warps store A split, hi in AM and lo bits in AML, so the
    consumers' A Vt loads both instead of splitting: the same bits as the consumers' split."""
    src = sub(src, "  static constexpr int TOTAL = SF + 4;\n  static_assert(REG_C * 32 * NCW",
              "  static constexpr bool ASPLIT = DP == 64;            // A stored split by the prep warps\n"
              "  static constexpr int AML = SF + 4;                 // A lo bits, 2 chunks of C x CS, when ASPLIT\n"
              "  static constexpr int TOTAL = AML + (ASPLIT ? 2 * C * CS : 0);\n  static_assert(REG_C * 32 * NCW")
    src = sub(src, """  am[t * CS + s] = (s <= t) ? a[0] : 0.f;
  am[t * CS + s + 1] = (s + 1 <= t) ? a[1] : 0.f;
  am[(t + 8) * CS + s] = (s <= t + 8) ? a[2] : 0.f;
  am[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? a[3] : 0.f;
""", """  const float a0 = (s <= t) ? a[0] : 0.f, a1 = (s + 1 <= t) ? a[1] : 0.f;
  const float a2 = (s <= t + 8) ? a[2] : 0.f, a3 = (s + 1 <= t + 8) ? a[3] : 0.f;
  if constexpr (W::ASPLIT) {
    float* aml = sm + W::AML + nb * C * CS;
    uint32_t h0, l0, h1, l1, h2, l2, h3, l3;
    split(a0, h0, l0);
    split(a1, h1, l1);
    split(a2, h2, l2);
    split(a3, h3, l3);
    am[t * CS + s] = __uint_as_float(h0);
    am[t * CS + s + 1] = __uint_as_float(h1);
    am[(t + 8) * CS + s] = __uint_as_float(h2);
    am[(t + 8) * CS + s + 1] = __uint_as_float(h3);
    aml[t * CS + s] = __uint_as_float(l0);
    aml[t * CS + s + 1] = __uint_as_float(l1);
    aml[(t + 8) * CS + s] = __uint_as_float(l2);
    aml[(t + 8) * CS + s + 1] = __uint_as_float(l3);
  } else {
    am[t * CS + s] = a0;
    am[t * CS + s + 1] = a1;
    am[(t + 8) * CS + s] = a2;
    am[(t + 8) * CS + s + 1] = a3;
  }
""")
    src = sub(src, """          split(am[ta], bh0, bl0);
          split(am[ta + 4], bh1, bl1);
""", """          if constexpr (W::ASPLIT) {
            const float* aml = sm + W::AML + nb * C * CS;
            bh0 = __float_as_uint(am[ta]);
            bl0 = __float_as_uint(aml[ta]);
            bh1 = __float_as_uint(am[ta + 4]);
            bl1 = __float_as_uint(aml[ta + 4]);
          } else {
            split(am[ta], bh0, bl0);
            split(am[ta + 4], bh1, bl1);
          }
""")
    return src


def linear_descriptors(src):
    """The wgmma shared-memory descriptors of Q S0 and K^T Vt from one base each and a constant step: the address
    field (bits 0-13, address >> 4) never carries (shared memory < 256 KB), so base + offset / 16 is the same
    descriptor without the mask-and-shift per wgmma."""
    src = sub(src, """      const uint64_t dh = wg_desc(kth + 2048 * a + o, 128, 1024), dl = wg_desc(ktl + 2048 * a + o, 128, 1024);
""", """      const uint64_t dh = dk0 + (2048 * a + o) / 4, dl = dl0 + (2048 * a + o) / 4;  // floats / 4 = 16-byte units
""")
    src = sub(src, """  wg_keep(vh);
  wg_keep(vl);
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int o = (2 * ks) * 32;
""", """  wg_keep(vh);
  wg_keep(vl);
  wg_fence();
  const uint64_t dk0 = wg_desc(kth, 128, 1024), dl0 = wg_desc(ktl, 128, 1024);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int o = (2 * ks) * 32;
""")
    src = sub(src, """          const uint64_t dh = wg_desc(qs + dq * 32, 128, 32 * DP);
          const uint64_t dl = wg_desc(ql + dq * 32, 128, 32 * DP);
""", """          const uint64_t dh = dq0h + dq * 8, dl = dq0l + dq * 8;  // dq * 32 floats = dq * 8 16-byte units
""")
    src = sub(src, """      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {""", """      float O[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
      const uint64_t dq0h = wg_desc(qs, 128, 32 * DP), dq0l = wg_desc(ql, 128, 32 * DP);
#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {""")
    return src


def make(stem, fourbuf, what, presplit=False, lindesc=False):
    src = (P / "v43_wsg.py").read_text()
    src = sub(src, OLD_STORES, NEW_STORES)
    src = sub(src, "      // + Vt^T A^T, mma.sync\n", GY)
    if fourbuf:
        src = four_buffers(src)  # v46a's change
    if presplit:
        src = presplit_a(src)
    if lindesc:
        src = linear_descriptors(src)
    tag = stem.split("_")[0]
    src = src.replace("sgd_v43_forward", f"sgd_{tag}_forward").replace('name="sgd_v43_wsg",', f'name="sgd_{stem}",')
    src = f"# {stem}: v43_wsg (below) with {what}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


make("v49a_ystore", False, "the y stores of a full chunk without branches, G_t loaded ahead of A Vt")
make("v49b_ystore_fourbuf", True, "the y stores of a full chunk without branches, G_t loaded ahead of A Vt, and at D = 64\n# four input buffers (the load warp three chunks ahead)")
make("v49c_ystore_asplit", True, "the y stores of a full chunk without branches, G_t loaded ahead of A Vt, and at D = 64\n# four input buffers and A stored split by the prep warps", presplit=True)
make("v49d_ystore_desc", True, "the y stores of a full chunk without branches, G_t loaded ahead of A Vt, at D = 64 four\n"
     "# input buffers and A stored split by the prep warps, and the wgmma descriptors as a base plus a constant step",
     presplit=True, lindesc=True)
