"""Write candidates/scalar_gated_delta/v54_famat.py from v52_sep.py and wsh54_block.cu (session 24; the block from
v53's by mk54block.py). probe53 on v53_f16 at large: the prep warps set the chunk (8,507 cycles): their A tile
(48 mma.sync a warp from the raw inputs) took 5,550 cycles, about the consumers' wgmma time (an mma.sync waits
behind in-flight wgmma), and taking the consumers' Q S0 wgmma away sped the whole kernel up as much as taking the A
tile away (551 against 625 µs). v54 builds A on the first prep warpgroup's fp16 wgmma from pieces the prep warps
split first (k's by step, a third set of pieces), behind the vote's barrier, and reads the raw q and k only in that
split (two buffers for them, three for v)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"
BLOCK = Path(__file__).with_name("wsh54_block.cu")


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


src = (P / "v52_sep.py").read_text()
src = "".join([
    "# v54_famat: v52_sep (below) with, at D = 128 and aligned inputs, every product but A Vt on fp16 wgmma (gd_wsh_kernel):\n"
    "# each operand in two fp16 pieces under a power-of-two scale per row or column; A on a prep warpgroup.\n",
    src])
src = sub(src, "#include <cuda_pipeline.h>\n", "#include <cuda_pipeline.h>\n#include <cuda_fp16.h>\n")
src = sub(src, "// ---------------------------------------------------------------------------------------------\n"
               "// v7 parallel", BLOCK.read_text() + "// ---------------------------------------------------------"
               "------------------------------------\n// v7 parallel")
src = sub(src, "    else launch_wsg<128>(q, k, v, gate, beta, y, B, T, H);\n",
          "    else launch_wsh(q, k, v, gate, beta, y, B, T, H);\n")
src = src.replace("sgd_v52_forward", "sgd_v54_forward").replace('name="sgd_v52_sep"', 'name="sgd_v54_famat"')
(ROOT / ".gpu/v54_famat.py").write_text(src)
print("wrote", ROOT / ".gpu/v54_famat.py")
