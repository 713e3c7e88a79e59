"""Timing-only variants of v53_f16 that leave one stage out (their outputs are wrong; graph replay at large only):
x53a no A tile on the prep warps, x53b no fp16 split on the prep warps, x53c no Q S0 wgmma on the consumers,
x53d no K^T Vt wgmma on the consumers."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src0 = (ROOT / "candidates/scalar_gated_delta/v53_f16.py").read_text()


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


def named(src, tag):
    return src.replace('name="sgd_v53_f16"', f'name="sgd_{tag}"')


variants = {
    "x53a_noatile": lambda s: sub(s, "    wsh_atile(sm, c, pw, gid, tig);\n", ""),
    "x53b_nosplit": lambda s: sub(s, """    if (pw < 2) wsh_split_q(qr, qh, ql, rq, 2 + pw, lane);
    else wsh_split_k(kr, kh, kl, rk, pw - 2, lane);
  } else {
    wsh_split_q(qr, qh, ql, rq, 0, lane);
    wsh_split_q(qr, qh, ql, rq, 1, lane);
  }""", """  }"""),
    "x53c_noqs0": lambda s: sub(s, """            wh_mma_n32(O, al[u], dh);
            wh_mma_n32(O, ah[u], dl);
            wh_mma_n32(O, ah[u], dh);""", ""),
    "x53d_noktvt": lambda s: sub(s, """          wh_mma_n64(acc[a], wl[m], dh);
          wh_mma_n64(acc[a], wh[m], dl);
          wh_mma_n64(acc[a], wh[m], dh);""", ""),
}
for tag, f in variants.items():
    (ROOT / f".gpu/{tag}.py").write_text(named(f(src0), tag))
    print("wrote", tag)
