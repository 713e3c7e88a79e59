# expect: load_error
# reason: fails at import on purpose
# Builds fine, then raises in module code: the import fails after load_inline.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    return at::Tensor(at::detail::empty_cpu(q.sizes(), at::kFloat));
}
"""
module = load_inline(name="fault_cpu_import_error", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)

raise RuntimeError("fault fixture: fails at import on purpose")


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
