# expect: runtime_error
# reason: expected 3-d q
# A TORCH_CHECK inside the extension fails (it expects the wrong rank): c10::Error becomes a RuntimeError.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.dim() == 3, "expected 3-d q, got ", q.dim(), "-d");
    return at::Tensor(at::detail::empty_cpu(q.sizes(), at::kFloat));
}
"""
module = load_inline(name="fault_cpu_torch_check", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
