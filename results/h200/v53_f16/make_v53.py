"""Write candidates/scalar_gated_delta/v53_f16.py from v52_sep.py (session 24). At D = 128 (the large shape) both
roles of v52's kernel set the chunk (~8,500 cycles): the consumers' Q S0 and K^T Vt are ~4,200 cycles of 3xTF32
wgmma, and the prep warps' A tiles (mma.sync) wait behind them on the tensor pipe. v53 runs those two products on
fp16 wgmma (twice the TF32 rate), each operand split in two fp16 pieces under a power-of-two scale per row or
column (the pieces hold what 3xTF32's hold; the scale keeps them in fp16's range), in a new kernel gd_wsh_kernel
for D = 128; with fp16 pieces the q / k pieces take the room the TF32 lo arrays took, so the raw inputs stay in
their buffers as at D = 64 in v52 (A tiles from the raw inputs, the safe path exact). D = 64 and every other
shape run v52's code."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"
BLOCK = Path(__file__).with_name("wsh_block.cu")


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


src = (P / "v52_sep.py").read_text()
src = "".join([
    "# v53_f16: v52_sep (below) with, at D = 128 and aligned inputs, Q S0 and K^T Vt on fp16 wgmma: each operand\n"
    "# split in two fp16 pieces under a power-of-two scale per row or column (gd_wsh_kernel); A and A Vt stay 3xTF32.\n",
    src])
src = sub(src, "#include <cuda_pipeline.h>\n", "#include <cuda_pipeline.h>\n#include <cuda_fp16.h>\n")
src = sub(src, "// ---------------------------------------------------------------------------------------------\n"
               "// v7 parallel", BLOCK.read_text() + "// ---------------------------------------------------------"
               "------------------------------------\n// v7 parallel")
src = sub(src, "    else launch_wsg<128>(q, k, v, gate, beta, y, B, T, H);\n",
          "    else launch_wsh(q, k, v, gate, beta, y, B, T, H);\n")
src = src.replace("sgd_v52_forward", "sgd_v53_forward").replace('name="sgd_v52_sep"', 'name="sgd_v53_f16"')
(ROOT / ".gpu/v53_f16.py").write_text(src)
print("wrote", ROOT / ".gpu/v53_f16.py")
