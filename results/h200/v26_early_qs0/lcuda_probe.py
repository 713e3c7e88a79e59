"""Does a load_inline extension link against libcuda (-lcuda) on this machine, and can it encode a tensor map?"""
import torch
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
#include <cuda.h>
int64_t probe(torch::Tensor x) {
  int v = 0;
  cuDriverGetVersion(&v);
  CUtensorMap map;
  cuuint64_t dims[2] = {128, (cuuint64_t)(x.numel() / 128)};
  cuuint64_t strides[1] = {128 * 4};
  cuuint32_t box[2] = {32, 8};
  cuuint32_t es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, x.data_ptr(), dims, strides, box, es,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return (int64_t)v * 1000 + (int64_t)r;
}
"""
m = load_inline(name="lcuda_probe", cpp_sources=[SRC], functions=["probe"], extra_ldflags=["-lcuda"], verbose=True)
print("driver version * 1000 + encode result:", m.probe(torch.zeros(128 * 64, device="cuda")))
