"""Write v41_vt_first.py and v42_prep_balance.py (candidates/scalar_gated_delta) from make_v39.py's files.
v41: v39a's code with v29a's D = 64 settings back (Q S0 in two groups, no register split there), so it is v29a at
D = 64 and, at D = 128, v29a with the Vt^T fragments built before Q S0 (measured 608-614 us against v29a's
617-623 in calls 1-2). v42: v39b (at D = 64 Q S0 in one group, registers 152 / 120, K^T Vt before the y stores)
with two prep-side changes: the split's q and k items dealt so that no prep thread takes more than 3 at D = 64
(v29a: 4 on the first 160 threads, which are also the A-tile warps), and at D = 64 the A tiles' middle product
(q hi K lo) in its own accumulators, so no chain is deeper than 4 mma.sync (v29a: 8)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"


def sub(src, old, new):
    assert src.count(old) == 1, (old[:100], src.count(old))
    return src.replace(old, new)


def v41():
    src = (P / "v39a_one_wait.py").read_text()
    src = sub(src, "REG_C = DP == 128 ? 168 : 152;", "REG_C = DP == 128 ? 168 : 0;")
    src = sub(src, "REG_P = DP == 128 ? 88 : 120;", "REG_P = DP == 128 ? 88 : 0;")
    src = sub(src, "  static constexpr int QG = DP == 64 ? 8 : 4;        // k steps",
              "  static constexpr int QG = 4;                       // k steps")
    src = src.replace("sgd_v39a_forward", "sgd_v41_forward").replace('name="sgd_v39a_one_wait",', 'name="sgd_v41_vt_first",')
    first = src.index("\n") + 1
    src = ("# v41_vt_first: v29a_wsg (below) with the Vt^T fragments built before Q S0 at D = 128 (the order v38b, v39a and\n"
           "# v39b measured at 608-614 us against v29a's 617-623); D = 64 runs v29a's code.\n" + src[first:])
    (P / "v41_vt_first.py").write_text(src)
    print("wrote", P / "v41_vt_first.py")


def v42():
    src = (P / "v39b_early_ktvt.py").read_text()
    # A tiles: q hi K lo in its own accumulators at D = 64
    src = sub(src, """    float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const int d = half * 64 + 8 * kk + tig;""", """    float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    float aM[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};  // q hi K lo, its own chains at D = 64
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const int d = half * 64 + 8 * kk + tig;""")
    src = sub(src, """      mma8(aL[kk & 1], al, bh0, bh1);
      mma8(aL[kk & 1], ah, bl0, bl1);
      mma8(aH[kk & 1], ah, bh0, bh1);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) accs[half][e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);""",
              """      mma8(aL[kk & 1], al, bh0, bh1);
      mma8(DP == 64 ? aM[kk & 1] : aL[kk & 1], ah, bl0, bl1);
      mma8(aH[kk & 1], ah, bh0, bh1);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e)
      accs[half][e] = DP == 64 ? ((aL[0][e] + aL[1][e]) + (aM[0][e] + aM[1][e])) + (aH[0][e] + aH[1][e])
                               : (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);""")
    # the split: k items start where the q items' remainder ends
    src = sub(src, """  // k: every row value is read before K^T hi lands over the rows.
  float kx[KXR][4];
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = ptid + r * NP;""", """  // k: every row value is read before K^T hi lands over the rows. Its items start at thread NQ4 % NP, where q's
  // leave off, so no thread takes more than ceil(2 NQ4 / NP) items of both.
  constexpr int KOFF = NQ4 % NP;
  const int kp = ptid >= KOFF ? ptid - KOFF : ptid + NP - KOFF;
  float kx[KXR][4];
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = kp + r * NP;""")
    src = sub(src, """  prep_sync<NP>();
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = ptid + r * NP;""", """  prep_sync<NP>();
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = kp + r * NP;""")
    src = src.replace("sgd_v39b_forward", "sgd_v42_forward").replace('name="sgd_v39b_early_ktvt",',
                                                                   'name="sgd_v42_prep_balance",')
    first = src.index("\n") + 1
    src = ("# v42_prep_balance: v39b_early_ktvt (Q S0 in one wgmma group at D = 64, registers 152 / 120, K^T Vt issued before\n"
           "# the y stores; Vt^T fragments before Q S0 at D = 128) with the prep warps' split items dealt evenly (at most 3 a\n"
           "# thread at D = 64, not 4) and, at D = 64, the A tiles' q hi K lo product in its own accumulator chains.\n"
           + src[first:])
    (P / "v42_prep_balance.py").write_text(src)
    print("wrote", P / "v42_prep_balance.py")


v41()
v42()


KSPLIT_OLD_1 = """  // k: every row value is read before K^T hi lands over the rows.
  float kx[KXR][4];
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = ptid + r * NP;"""
KSPLIT_OLD_2 = """  prep_sync<NP>();
#pragma unroll
  for (int r = 0; r < KXR; ++r) {
    const int idx = ptid + r * NP;"""


def ksplit(src, koff):
    src = sub(src, KSPLIT_OLD_1, f"""  // k: every row value is read before K^T hi lands over the rows. Its items start at thread KOFF (where q's leave
  // off when KOFF = NQ4 % NP): which prep warps carry the split's remainder.
  constexpr int KOFF = {koff};
  const int kp = ptid >= KOFF ? ptid - KOFF : ptid + NP - KOFF;
  float kx[KXR][4];
#pragma unroll
  for (int r = 0; r < KXR; ++r) {{
    const int idx = kp + r * NP;""")
    return sub(src, KSPLIT_OLD_2, KSPLIT_OLD_2.replace("ptid + r * NP", "kp + r * NP"))


def v43():
    """v41 with v42's dealing of the split at D = 128 only: v29a's code at D = 64, v42's at D = 128."""
    src = ksplit((P / "v41_vt_first.py").read_text(), "DP == 128 ? NQ4 % NP : 0")
    src = src.replace("sgd_v41_forward", "sgd_v43_forward").replace('name="sgd_v41_vt_first",', 'name="sgd_v43_wsg",')
    first = src.index("\n") + 1
    second = src.index("\n", first) + 1
    src = ("# v43_wsg: v29a_wsg (below) with, at D = 128, the Vt^T fragments built before Q S0 and the prep warps' k split\n"
           "# items starting where the q items' remainder ends (v42's code there: 601 us against v29a's 624); D = 64 runs\n"
           "# v29a's code.\n" + src[second:])
    (P / "v43_wsg.py").write_text(src)
    print("wrote", P / "v43_wsg.py")


def v44():
    """v39b with v42's dealing of the split at both sizes and v39b's A tiles: which of v42's two D = 64 changes cost."""
    src = ksplit((P / "v39b_early_ktvt.py").read_text(), "NQ4 % NP")
    src = src.replace("sgd_v39b_forward", "sgd_v44_forward").replace('name="sgd_v39b_early_ktvt",', 'name="sgd_v44_ksplit",')
    first = src.index("\n") + 1
    src = ("# v44_ksplit: v39b_early_ktvt with v42's dealing of the prep warps' split items and v39b's A tiles.\n" + src[first:])
    (P / "v44_ksplit.py").write_text(src)
    print("wrote", P / "v44_ksplit.py")


v43()
v44()
