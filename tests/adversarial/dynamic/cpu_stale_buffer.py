# expect: wrong
# Returns an uninitialised output without writing it, hoping the allocator hands back an earlier result.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <vector>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    return at::detail::empty_cpu(q.sizes(), at::kFloat);
}
"""

module = load_inline(name="dyn_cpu_stale_buffer", cpp_sources=CPP, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
