# expect: I102
# CPU host code does tensor arithmetic with overloaded operators only.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""#include <torch/extension.h>
#include <vector>
#include <algorithm>

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto g = gate.unsqueeze(-1);
    auto scaled = q * g - k;
    return scaled;
}
"""


ext = load_inline(
    name="i102_operators_cpu",
    cpp_sources=SOURCE,
    functions=["sgd"],
)



class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        return ext.sgd(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
