"""Write candidates/scalar_gated_delta/v33_yprep_ql.py from v27_ws_wgmma.py (as of commit 80bf6db) with gd_wsg_kernel<DP>
from .gpu/wsg33_kernel.cu: v29a with y(c) of a tensor-core chunk staged over chunk c's q lo (at D = 64 and 128) and
stored by the prep warps at the start of chunk c+1."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

HEADER = (
    "# {stem} (scalar gates): v27_ws_wgmma with its warp-specialised wgmma kernel templated on the head size and\n"
    "# run at D = 64 too (16-byte aligned inputs): one consumer warpgroup owns the 64 x 64 state and runs chunk c's\n"
    "# wgmma and mma.sync work and stages y(c) over chunk c's q lo; 11 prep warps split, scan and build chunk c+1's A\n"
    "# tiles and store y(c-1); one warp issues chunk c+2's cp.async. D = 128: v27's kernel with the registers split\n"
    "# 168 / 88 (v27: 192 / 64) and y staged and stored the same way. sm_90a only. Seed and other D: v27's kernels.\n"
    "# Session 19: v29a (y from the consumers' registers at D = 64 too) 73.4 / 621 us; v31 (y stored by the load warp)\n"
    "# 89.5: one warp's stores bound the chunk. Prediction (before any GPU run): medium 59-64 us, large 540-570 us:\n"
    "# the consumers (binding at both) ~1,000 cycles a chunk shorter, the prep warps longer inside their wait.\n"
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
    "v33_yprep_ql": ([], ""),
}


def main():
    for stem, (subs, note) in VARIANTS.items():
        src = subprocess.run(["git", "show", "80bf6db:candidates/scalar_gated_delta/v27_ws_wgmma.py"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        kernel = (HERE / "wsg33_kernel.cu").read_text()
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
