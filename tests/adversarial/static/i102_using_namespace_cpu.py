# expect: I102
# using namespace at; then calls bmm unqualified.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""#include <torch/extension.h>
#include <vector>
#include <algorithm>
using namespace at;

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto kv = bmm(k.flatten(0, 2).unsqueeze(-1), v.flatten(0, 2).unsqueeze(-2));
    return bmm(q.flatten(0, 2).unsqueeze(-2), kv).view_as(q);
}
"""


ext = load_inline(
    name="i102_using_namespace_cpu",
    cpp_sources=SOURCE,
    functions=["sgd"],
)



class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        return ext.sgd(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
