# expect: crashed
# reason: SIGSEGV
# Writes through a null pointer inside the extension: the worker dies from SIGSEGV, the run goes on.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Two light torch headers instead of the implicit <torch/extension.h>: a third of the compile time.
CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    float* volatile out = nullptr;    // meant to be y.data_ptr<float>()
    out[0] = 1.0f;
    return y;
}
"""
module = load_inline(name="fault_cpu_segfault", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
