"""Write candidates/scalar_gated_delta/v28*.py from v27_ws_wgmma.py: gd_wsg_kernel templated on DP (.gpu/wsg28_kernel.cu),
run at D = 128 as in v27 and at D = 64 (aligned) with one consumer warpgroup, where v27 ran v20's gd_ws_kernel.
Variants: v28b (D = 64 with one load warp, 11 prep warps), v28c (D = 128 registers split 168 / 88, not 192 / 64)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

HEADER = (
    "# v28_wsg64 (scalar gates): v27_ws_wgmma with its warp-specialised wgmma kernel templated on the head size and\n"
    "# run at D = 64 too (16-byte aligned inputs): one consumer warpgroup owns the 64 x 64 state and runs chunk c's\n"
    "# wgmma and mma.sync work and writes y(c); 10 prep warps split, scan and build chunk c+1's A tiles; 2 warps issue\n"
    "# chunk c+2's cp.async. D = 128 runs v27's kernel (now a template, the same arithmetic). sm_90a only. Seed and\n"
    "# other D: the kernels of v27.\n"
    "# Prediction (before any GPU run): medium 55-70 us (v27 / v20 88-89), the prep warps binding at ~3,000-3,500\n"
    "# cycles a chunk against the consumers' ~2,400.\n"
)
SECTION = re.compile(r"// -+\n// v27: gd_wg_kernel's arithmetic at D = 128.*?(?=// -+\n// v7 parallel)", re.S)
DISPATCH_OLD = """  } else if (D <= 64) {
    launch_ws<false>(q, k, v, gate, beta, y, B, T, H, D);
  } else if (D == 128 && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                            reinterpret_cast<uintptr_t>(v.data_ptr<float>())) % 16 == 0)) {
    launch_wsg(q, k, v, gate, beta, y, B, T, H);
  } else {"""
DISPATCH_NEW = """  } else if ((D == 64 || D == 128) && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                                        reinterpret_cast<uintptr_t>(v.data_ptr<float>())) % 16 == 0)) {
    if (D == 64) launch_wsg<64>(q, k, v, gate, beta, y, B, T, H);
    else launch_wsg<128>(q, k, v, gate, beta, y, B, T, H);
  } else if (D <= 64) {
    launch_ws<false>(q, k, v, gate, beta, y, B, T, H, D);
  } else {"""

VARIANTS = {
    "v28_wsg64": [],
    "v28b_one_loader": [("static constexpr int NLW = DP == 128 ? 1 : 2;", "static constexpr int NLW = 1;"),
                        ("10 prep warps, 2 load warps", "11 prep warps, 1 load warp")],
    "v28c_regs168": [("setmaxnreg.dec.sync.aligned.u32 64;", "setmaxnreg.dec.sync.aligned.u32 88;"),
                     ("setmaxnreg.inc.sync.aligned.u32 192;", "setmaxnreg.inc.sync.aligned.u32 168;"),
                     ("8 consumer warps at 192 registers, 7 prep warps at 64", "8 consumer warps at 168 registers, 7 prep warps at 88")],
}
NOTE = {
    "v28b_one_loader": "# v28b: at D = 64 one load warp and 11 prep warps (v28: 2 and 10).\n",
    "v28c_regs168": "# v28c: at D = 128 the registers split 168 / 88 (v27, v28: 192 / 64), for the prep warps' A tiles and split.\n",
}


def main():
    for stem, subs in VARIANTS.items():
        src = (ROOT / "candidates/scalar_gated_delta/v27_ws_wgmma.py").read_text()
        kernel = (HERE / "wsg28_kernel.cu").read_text()
        for old, new in subs:
            assert kernel.count(old) == 1, (stem, old)
            kernel = kernel.replace(old, new)
        lines = src.split("\n")
        first_code = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        src = HEADER.replace("v28_wsg64", stem) + NOTE.get(stem, "") + "\n".join(lines[first_code:])
        assert len(SECTION.findall(src)) == 1
        src = SECTION.sub(lambda m: kernel.lstrip("\n"), src)
        assert src.count(DISPATCH_OLD) == 1
        src = src.replace(DISPATCH_OLD, DISPATCH_NEW)
        src = src.replace("sgd_v27_forward", f"sgd_{stem.split('_')[0]}_forward")
        assert src.count('name="sgd_v27_ws_wgmma",') == 1
        src = src.replace('name="sgd_v27_ws_wgmma",', f'name="sgd_{stem}",')
        out = ROOT / f"candidates/scalar_gated_delta/{stem}.py"
        out.write_text(src)
        print("wrote", out)


main()
