# expect: timeout
# reason: evaluation killed
# forward never returns (an endless loop in C++): the worker is killed at evaluate.time_limit_s.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    volatile bool converged = false;  // never set: the loop cannot be optimised away
    while (!converged) {
    }
    return y;
}
"""
module = load_inline(name="fault_cpu_forward_hang", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
