# expect: I102
# CPU candidate whose C++ runs the recurrence with ATen tensor methods.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""#include <torch/extension.h>
#include <vector>
#include <algorithm>

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    auto state = torch::zeros({B, H, D, D}, q.options());
    std::vector<torch::Tensor> outs;
    for (int64_t t = 0; t < T; ++t) {
        auto kt = k.select(1, t).unsqueeze(-1), vt = v.select(1, t).unsqueeze(-2);
        state = state.mul(gate.select(1, t).view({B, H, 1, 1})).add(kt.mul(vt));
        outs.push_back(q.select(1, t).unsqueeze(-1).mul(state).sum(-2));
    }
    return torch::stack(outs, 1);
}
"""


ext = load_inline(
    name="i102_tensor_methods_cpu",
    cpp_sources=SOURCE,
    functions=["sgd"],
)



class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        return ext.sgd(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
