# expect: wrong
# Returns torch::empty_like(q) without writing it, hoping the allocator hands back an earlier result.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    return torch::empty_like(q);
}
"""

module = load_inline(name="dyn_cpu_stale_buffer", cpp_sources=CPP, functions=["run"], extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
