# ptxas -v of a candidate's CUDA source, compiled here without linking (CPATH: the CUDA headers the torch wheel ships): bash ptxas.sh FILE.py; also counts HGMMA / DEPBAR in gd_wsh_kernel (cuobjdump from the triton wheel)
set -e
ROOT=$(git rev-parse --show-toplevel)
f=$1; d=/tmp/ptxas_$(basename $f .py); mkdir -p $d
$ROOT/.venv/bin/python - "$f" "$d" <<'PY'
import re, sys, pathlib
src = pathlib.Path(sys.argv[1]).read_text()
cuda = re.search(r'CUDA_SRC = r"""(.*?)"""', src, re.S).group(1)
disp = re.search(r'DISPATCH_SRC = r"""(.*?)"""', src, re.S).group(1)
pathlib.Path(sys.argv[2], "k.cu").write_text(cuda + disp)
PY
export CPATH=$ROOT/.venv/lib/python3.11/site-packages/nvidia/cu13/include
TI=$ROOT/.venv/lib/python3.11/site-packages/torch/include
/usr/local/bin/nvcc -isystem $TI -isystem $TI/torch/csrc/api/include -isystem /root/.pyenv/versions/3.11.7/include/python3.11 -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr -O3 -lineinfo --ptxas-options=-v -gencode=arch=compute_90a,code=sm_90a -std=c++20 -cubin $d/k.cu -o $d/k.cubin 2>&1 | grep -E "C75|gd_wsh|spill|Used" | grep -A3 -E "C75|gd_wsh" | cut -c1-200
# HGMMA and WARPGROUP.DEPBAR (wgmma waits) in gd_wsh_kernel's SASS: one DEPBAR per HGMMA means ptxas serialized them
CUO=$ROOT/.venv/lib/python3.11/site-packages/triton/backends/nvidia/bin/cuobjdump
$CUO -sass $d/k.cubin | awk '/Function :.*gd_wsh_kernel/{p=1;next} /Function :/{p=0} p' > $d/wsh.sass
echo "gd_wsh_kernel: HGMMA $(grep -c HGMMA $d/wsh.sass) DEPBAR $(grep -c WARPGROUP.DEPBAR $d/wsh.sass)"
