"""Write candidates/scalar_gated_delta/v51a_trim.py and v51b_deal.py from v49b_ystore_fourbuf.py (session 23).
v51a: v50b's two trims on v49b (chunk 0 without Q S0, the state being zero; the last chunk without K^T Vt and the
state update), which v50b read at -1.7 µs (medium) and -7 µs (large) against v50a in one harness run.
v51b: v51a with the prep warps' split items dealt away from the warps that build an A tile. probe46 on v49b put the
A-tile prep warps 110-350 cycles after the consumers at the medium chunk barrier (the A-tile-free ones ~1,330
before) and, at large, the six A-tile prep warps 800-1,230 after them (the seventh, without a tile, ~3,180 before):
the prep warps set the chunk. At D = 64 the q and k items now start at the first A-tile-free warp (its threads take
the second item of each), so an A-tile warp splits one q and one k item instead of two; at D = 128 each lane of
the A-tile-free warp takes 16 q items first and the A-tile warps share the other 512 (2-3 each instead of 4-5).
Which thread splits an item changes nothing in its bits: outputs bitwise v49b's."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


def trims(src):
    src = sub(src, """#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {
        uint32_t ah[W::QG][4], al[W::QG][4];""", """      if (ch > 0) {  // chunk 0: S is zero, so O stays +0 as the wgmma would leave it
#pragma unroll
      for (int qb = 0; qb < NKK / W::QG; ++qb) {
        uint32_t ah[W::QG][4], al[W::QG][4];""")
    src = sub(src, """        wg_keep(al);
      }
      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
""", """        wg_keep(al);
      }
      }  // ch > 0
      if constexpr (!W::VTF) wsg_vt_frags<DP>(vh, vl, vsm, cfs, j0, tig);
""")
    src = sub(src, """      if constexpr (!W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      wg_wait0();
""", """      if (ch + 1 == nchunks) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      if constexpr (!W::KVE) wsg_ktvt_issue<NA>(acc, vh, vl, kth, ktl);
      wg_wait0();
""")
    return src


def deal(src):
    src = sub(src, """  for (int i = ptid; i < NQ4; i += NP) {
    const int o = 4 * i;
    const float4 x = *reinterpret_cast<const float4*>(qs + o);""", """  // Which prep threads split which q items: at D = 64 the items start at the first A-tile-free warp (pw 6), so
  // its threads take the second ones; at D = 128 the A-tile-free warp's lanes take XQ items each first.
  constexpr int ROT = DP == 64 ? 6 * 32 : 0, XQ = DP == 128 ? 16 : 0;
  int qi = ptid >= ROT ? ptid - ROT : ptid + NP - ROT, qend = NQ4, qstep = NP;
  if constexpr (XQ > 0) {
    if (pw == W::NPW - 1) {
      qi = lane;
      qend = 32 * XQ;
      qstep = 32;
    } else {
      qi = 32 * XQ + ptid;
      qstep = NP - 32;
    }
  }
  for (int i = qi; i < qend; i += qstep) {
    const int o = 4 * i;
    const float4 x = *reinterpret_cast<const float4*>(qs + o);""")
    src = sub(src, "  constexpr int KOFF = DP == 128 ? NQ4 % NP : 0;\n", "  constexpr int KOFF = DP == 128 ? NQ4 % NP : ROT;\n")
    return src


def make(stem, what, dealt=False):
    src = (P / "v49b_ystore_fourbuf.py").read_text()
    src = trims(src)
    if dealt:
        src = deal(src)
    src = src.replace("sgd_v49b_forward", f"sgd_{stem.split('_')[0]}_forward").replace(
        'name="sgd_v49b_ystore_fourbuf",', f'name="sgd_{stem}",')
    src = f"# {stem}: v49b_ystore_fourbuf (below) with {what}.\n" + src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")


make("v51a_trim", "chunk 0 without Q S0 and the last chunk without K^T Vt and the state update")
make("v51b_deal", "chunk 0 without Q S0, the last chunk without K^T Vt and the state update,\n"
     "# and the prep warps' q / k split items dealt away from the warps that build an A tile", dealt=True)
