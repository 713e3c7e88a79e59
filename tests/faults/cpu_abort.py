# expect: crashed
# reason: SIGABRT
# Calls abort() inside the extension: the worker dies from SIGABRT, the run goes on.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <cstdlib>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    if (q.size(3) > 0) std::abort();  // an assertion of the author's own that always fires
    return y;
}
"""
module = load_inline(name="fault_cpu_abort", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
