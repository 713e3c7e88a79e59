# expect: runtime_error
# reason: DefaultCPUAllocator
# Asks for a 4 PiB workspace: the CPU allocator refuses at once (nothing is touched) and torch raises.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    const int64_t huge = int64_t(1) << 50;   // floats: 4 PiB, beyond any address space
    at::Tensor workspace(at::detail::empty_cpu({huge}, at::kFloat));
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    workspace.data_ptr<float>()[0] = 0.0f;
    return y;
}
"""
module = load_inline(name="fault_cpu_host_oom", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
