"""Write candidates/scalar_gated_delta/v27_ws_wgmma.py from v25_split_issue.py: at D = 128 (aligned), gd_wsg_kernel
(.gpu/wsg_kernel.cu): warp specialisation with the register file split by setmaxnreg; other D > 64 keep v25's
gd_wg_kernel."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

HEADER = (
    "# v27_ws_wgmma (scalar gates): v25_split_issue with a warp-specialised kernel at D = 128 (16-byte aligned inputs):\n"
    "# 8 consumer warps (192 registers each, by setmaxnreg) own the state and run chunk c's wgmma and mma.sync work,\n"
    "# while 7 producer warps (64 registers) split, scan and build the A tiles of chunk c+1 and one warp issues chunk\n"
    "# c+2's cp.async. v25's phase probe put the state-independent work at half of each chunk, all warps in lockstep.\n"
    "# sm_90a only. Other D > 64 run v25's gd_wg_kernel; seed, medium and D <= 64 the kernels of v20_ws.\n"
    "# Prediction (before any GPU run): large 500-600 us (v25 781), bound by the producers (~7,000 cycles a chunk).\n"
)

DISPATCH_OLD = """  } else {
    launch_wg<false>(q, k, v, gate, beta, y, B, T, H, D);
  }
}"""
DISPATCH_NEW = """  } else if (D == 128 && ((reinterpret_cast<uintptr_t>(q.data_ptr<float>()) | reinterpret_cast<uintptr_t>(k.data_ptr<float>()) |
                            reinterpret_cast<uintptr_t>(v.data_ptr<float>())) % 16 == 0)) {
    launch_wsg(q, k, v, gate, beta, y, B, T, H);
  } else {
    launch_wg<false>(q, k, v, gate, beta, y, B, T, H, D);
  }
}"""
ANCHOR = "// ---------------------------------------------------------------------------------------------\n// v7 parallel"


HEADER_B = HEADER.replace("v27_ws_wgmma (scalar gates)", "v27b_cons_atile (scalar gates)").replace(
    "# Prediction (before any GPU run)", "# v27b: the A tiles on consumer warps 0-5 (as v21 did at D = 64), the producers only split and scan.\n"
    "# Prediction (before any GPU run)")

PREP_A_OLD = """  if (safe || pw >= 6) return;
  wsg_atile(sm, c, pw, gid, tig);
}"""
PREP_A_NEW = """}"""
CONS_A_OLD = """    if (!sfl[nb]) {
      // ---- O^T = S^T Q^T"""
CONS_A_NEW = """    if (!sfl[nb]) {
      if (warp < 6) wsg_atile(sm, ch, warp, gid, tig);
      // ---- O^T = S^T Q^T"""
CONS_BAR_OLD = """      // + Vt^T A^T, mma.sync
"""
CONS_BAR_NEW = """      asm volatile("bar.sync 3, 256;" ::: "memory");  // the A tiles of warps 0-5 visible
      // + Vt^T A^T, mma.sync
"""


def main():
    make(False)
    make(True)


def make(cons_atile: bool):
    src = (ROOT / "candidates/scalar_gated_delta/v25_split_issue.py").read_text()

    def sub(old, new):
        nonlocal src
        assert src.count(old) == 1, (old[:80], src.count(old))
        src = src.replace(old, new)

    lines = src.split("\n")
    first_code = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    src = (HEADER_B if cons_atile else HEADER) + "\n".join(lines[first_code:])
    kernel = (HERE / "wsg_kernel.cu").read_text()
    if cons_atile:
        for old, new in ((PREP_A_OLD, PREP_A_NEW), (CONS_A_OLD, CONS_A_NEW), (CONS_BAR_OLD, CONS_BAR_NEW)):
            assert kernel.count(old) == 1, old
            kernel = kernel.replace(old, new)
    sub(ANCHOR, kernel.lstrip("\n") + "\n" + ANCHOR)
    sub(DISPATCH_OLD, DISPATCH_NEW)
    stem = "v27b_cons_atile" if cons_atile else "v27_ws_wgmma"
    src = src.replace("sgd_v25_forward", f"sgd_{stem.split('_')[0]}_forward")
    sub('name="sgd_v25_split_issue",', f'name="sgd_{stem}",')
    out = ROOT / f"candidates/scalar_gated_delta/{stem}.py"
    out.write_text(src)
    print("wrote", out)


main()
