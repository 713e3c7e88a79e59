"""Write candidates/scalar_gated_delta/v29*.py from v27_ws_wgmma.py with gd_wsg_kernel<DP> from .gpu/wsg30_kernel.cu
(v28's template with per-DP knobs): v29a one load warp at both DP and the D = 128 registers split 168 / 88 (v28b and
v28c together); v29b v29a with y staged in shared memory at D = 64 and stored as float4 rows; v29c v29a with Q S0 in
one wgmma group at D = 64 and the registers split 160 / 112 there."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

HEADER = (
    "# {stem} (scalar gates): v27_ws_wgmma with its warp-specialised wgmma kernel templated on the head size and\n"
    "# run at D = 64 too (16-byte aligned inputs): one consumer warpgroup owns the 64 x 64 state and runs chunk c's\n"
    "# wgmma and mma.sync work and writes y(c); 11 prep warps split, scan and build chunk c+1's A tiles; one warp issues\n"
    "# chunk c+2's cp.async. D = 128 runs v27's kernel with the registers split 168 / 88 (v27: 192 / 64). sm_90a only.\n"
    "# Seed and other D: the kernels of v27. At D = 64, y(c) is staged in shared memory and written by the bulk-copy\n"
    "# engine (one copy a row), off the load warp's cp.async queue. v29a (scattered stores) 73.4 / 621 us.\n"
    "# Prediction (before any GPU run): medium 62-68 us, the consumers' ~1,000-cycle store phase down to ~200.\n"
)
SECTION = re.compile(r"// -+\n// v27: gd_wg_kernel's arithmetic at D = 128.*?(?=// -+\n// v7 parallel)", re.S)
DISPATCH_OLD = """  } else if (D <= 64) {
    launch_ws<false>(q, k, v, gate, beta, y, B, T, H, D);
  } else if (D == 128 && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                            reinterpret_cast<uintptr_t>(v.data_ptr<float>())) % 16 == 0)) {
    launch_wsg(q, k, v, gate, beta, y, B, T, H);
  } else {"""
DISPATCH_NEW = """  } else if ((D == 64 || D == 128) && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                                        reinterpret_cast<uintptr_t>(v.data_ptr<float>()) | reinterpret_cast<uintptr_t>(y.data_ptr<float>())) % 16 == 0)) {
    if (D == 64) launch_wsg<64>(q, k, v, gate, beta, y, B, T, H);
    else launch_wsg<128>(q, k, v, gate, beta, y, B, T, H);
  } else if (D <= 64) {
    launch_ws<false>(q, k, v, gate, beta, y, B, T, H, D);
  } else {"""

VARIANTS = {
    "v30_bulk_y": ([], ""),
    "v30b_avt2": ([("static constexpr bool AVT2 = false;", "static constexpr bool AVT2 = true; ")],
                  "# v30b: A Vt on two accumulator chains (even and odd k steps), at both D.\n"),
}


def main():
    for stem, (subs, note) in VARIANTS.items():
        src = (ROOT / "candidates/scalar_gated_delta/v27_ws_wgmma.py").read_text()
        kernel = (HERE / "wsg30_kernel.cu").read_text()
        for old, new in subs:
            assert kernel.count(old) == 1, (stem, old)
            kernel = kernel.replace(old, new)
        lines = src.split("\n")
        first_code = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        src = HEADER.format(stem=stem) + note + "\n".join(lines[first_code:])
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
