# expect: runtime_error
# reason: TypeError
# forward takes three of the five inputs: the call raises TypeError.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v) {
    return at::Tensor(at::detail::empty_cpu(q.sizes(), at::kFloat));
}
"""
module = load_inline(name="fault_cpu_wrong_signature", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v):
        return module.run(q, k, v)
