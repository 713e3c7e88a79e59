"""Write .gpu/v55a_qpipe.py and .gpu/v55b_ktvt_first.py from candidates/scalar_gated_delta/v54_famat.py (session 24).
probe54 on v54 at large: the consumers set the chunk (7,979 cycles; prep warps arrive 1,600-2,900 early), and their
Q S0 takes ~3,000 cycles: each group's fp16 pieces are converted (F2FP packs at a quarter of the issue rate, cvtbench)
while the tensor pipe idles, then issued and waited for. v55a: Q S0 in four groups of two k steps, a group converted
while the one before runs (wait_group 1; the same 32 registers of pieces). v55b: v55a with K^T Vt issued before the y
stores, so the stores run under its wgmma (with the registers split 176 / 80 and the k split in two passes: at
168 / 88 the accumulators spilled 332 bytes)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src0 = (ROOT / "candidates/scalar_gated_delta/v54_famat.py").read_text()


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


QOLD = """        for (int qb = 0; qb < 8 / W::QG; ++qb) {
          uint32_t ah[W::QG][4], al[W::QG][4];
#pragma unroll
          for (int u = 0; u < W::QG; ++u) {
            const int kk = W::QG * qb + u;
            split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, ah[u][0], al[u][0]);
            split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, ah[u][1], al[u][1]);
            split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, ah[u][2], al[u][2]);
            split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ah[u][3], al[u][3]);
          }
          wg_keep(O);
          wg_keep(ah);
          wg_keep(al);
          wg_fence();
#pragma unroll
          for (int u = 0; u < W::QG; ++u) {
            const int kk = W::QG * qb + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);
            const uint64_t dl = wg_desc(reinterpret_cast<const float*>(ql) + 64 * kk, 128, 2048);
            wh_mma_n32(O, al[u], dh);
            wh_mma_n32(O, ah[u], dl);
            wh_mma_n32(O, ah[u], dh);
          }
          wg_commit();
          wg_wait0();
          wg_keep(O);
          wg_keep(ah);
          wg_keep(al);
        }
"""
QNEW = """        // Four groups of two k steps in two register slots: group g's pieces are converted while group g - 1
        // runs (wait_group 1 after each commit frees the slot group g + 1 takes).
        uint32_t ah[2][2][4], al[2][2][4];
#pragma unroll
        for (int g = 0; g < 4; ++g) {
          uint32_t(&ph)[2][4] = ah[g & 1];
          uint32_t(&pl)[2][4] = al[g & 1];
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int kk = 2 * g + u;
            split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, ph[u][0], pl[u][0]);
            split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, ph[u][1], pl[u][1]);
            split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, ph[u][2], pl[u][2]);
            split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ph[u][3], pl[u][3]);
          }
          wg_keep(O);
          wg_keep(ph);
          wg_keep(pl);
          wg_fence();
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int kk = 2 * g + u;  // columns 16 kk .. 16 kk + 15: 128 halves (64 floats) a step
            const uint64_t dh = wg_desc(reinterpret_cast<const float*>(qh) + 64 * kk, 128, 2048);
            const uint64_t dl = wg_desc(reinterpret_cast<const float*>(ql) + 64 * kk, 128, 2048);
            wh_mma_n32(O, pl[u], dh);
            wh_mma_n32(O, ph[u], dl);
            wh_mma_n32(O, ph[u], dh);
          }
          wg_commit();
          if (g < 3) wg_wait1();
          else wg_wait0();
          wg_keep(O);
          wg_keep(ah[0]);
          wg_keep(ah[1]);
          wg_keep(al[0]);
          wg_keep(al[1]);
        }
"""
WAIT1 = """__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
"""


def qpipe(src):
    src = sub(src, QOLD, QNEW)
    return sub(src, WAIT1, WAIT1 + """__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
""")


YSTORE = """      if (n == C) {
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
      if (ch + 1 == nchunks) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      // ---- S^T = G_C (S^T + Vt^T K): Vt^T's TF32"""


def ktvt_first(src):
    body = YSTORE[: YSTORE.index("      if (ch + 1 == nchunks) {")]
    body = "\n".join(("  " + l if l else l) for l in body.rstrip("\n").split("\n"))
    new = ("      auto store_y = [&]() {  // y(c) = G_t O^T from registers\n" + body + "\n      };\n"
           "      if (ch + 1 == nchunks) {\n        store_y();\n        cta_sync();\n"
           "        break;  // the last chunk: no state after it\n      }\n"
           "      // ---- S^T = G_C (S^T + Vt^T K), issued before the y stores (they run under it): Vt^T's TF32")
    src = sub(src, YSTORE, new)
    wsh = src.index("gd_wsh_kernel(")
    head, tail = src[:wsh], src[wsh:]
    tail = sub(tail, """      wg_commit();
      wg_wait0();
#pragma unroll
      for (int a = 0; a < 2; ++a) wg_keep(acc[a]);""", """      wg_commit();
      store_y();
      wg_wait0();
#pragma unroll
      for (int a = 0; a < 2; ++a) wg_keep(acc[a]);""")
    return head + tail


def fit(src):
    """Room for K^T Vt's accumulators under the y stores: consumers 176 registers, prep warps 80 (the register file's
    65,536 exactly), the k split by state column in two passes (the maximum, then each block of 8 steps reloaded)."""
    src = sub(src, "REG_C = 168, REG_P = 88, QG = 4;", "REG_C = 176, REG_P = 80, QG = 4;")
    src = sub(src, """  float x[32];
  float m = 0.f;
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    x[s] = kr[s * DPS + i];
    m = fmaxf(m, fabsf(x[s]));
  }""", """  float m = 0.f;
#pragma unroll
  for (int s = 0; s < 32; ++s) m = fmaxf(m, fabsf(kr[s * DPS + i]));""")
    return sub(src, """    const float* xb = x + 8 * b8;
    uint32_t h0""", """    float xb[8];
#pragma unroll
    for (int s = 0; s < 8; ++s) xb[s] = kr[(8 * b8 + s) * DPS + i];
    uint32_t h0""")


def named(src, tag, note):
    src = src.replace('name="sgd_v54_famat"', f'name="sgd_{tag}"').replace("sgd_v54_forward", f"sgd_{tag.split('_')[0]}_forward")
    return note + src


a = named(qpipe(src0), "v55a_qpipe", "# v55a_qpipe: v54_famat (below) with Q S0's fp16 pieces converted a group ahead of the wgmma (D = 128).\n")
b = named(fit(ktvt_first(qpipe(src0))), "v55b_ktvt_first",
          "# v55b_ktvt_first: v55a_qpipe with K^T Vt issued before the y stores (D = 128), registers 176 / 80.\n"
          "# v55a_qpipe: v54_famat (below) with Q S0's fp16 pieces converted a group ahead of the wgmma (D = 128).\n")
(ROOT / ".gpu/v55a_qpipe.py").write_text(a)
(ROOT / ".gpu/v55b_ktvt_first.py").write_text(b)
print("wrote v55a_qpipe, v55b_ktvt_first")
