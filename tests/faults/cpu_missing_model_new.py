# expect: rejected
# check: S002
# A real load_inline but the class is misnamed (Model_New): rejected by the static check, never compiled.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    return at::Tensor(at::detail::empty_cpu(q.sizes(), at::kFloat));
}
"""
module = load_inline(name="fault_cpu_missing_model_new", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class Model_New(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
