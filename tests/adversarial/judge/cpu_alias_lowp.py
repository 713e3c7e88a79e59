# expect: wrong
# Hides its arithmetic from the rules and cheats the numbers: torch.einsum reached as getattr(torch, 'ein' + 'sum'), casts through operator.methodcaller and a lambda, the whole recurrence in its parallel (attention-like) form with bfloat16 operands. Fast, but about 1e-2 off; the judge's float64 gold rejects it.
import operator

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/core/Tensor.h>

// The 'kernel': hands back a contiguous float32 result.
at::Tensor finish(at::Tensor y) {
    TORCH_CHECK(y.scalar_type() == at::kFloat, "float32 expected");
    return y.is_contiguous() ? y : y.contiguous();
}
"""
ext = load_inline(name="judge_cpu_alias_lowp", cpp_sources=CPP, functions=["finish"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

_contract = getattr(torch, "ein" + "sum")
_narrow = operator.methodcaller("to", getattr(torch, "bfloat" + "16"))
_widen = lambda x: x.float()  # noqa: E731


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        steps = q.shape[1]
        log_decay = gate.log().cumsum(1)                                   # (B, T, H)
        gap = log_decay[:, :, None, :] - log_decay[:, None, :, :]          # (B, T, S, H)
        causal = torch.ones(steps, steps, dtype=torch.bool, device=q.device).tril()[None, :, :, None]
        weights = torch.where(causal, gap, torch.full_like(gap, float("-inf"))).exp() * beta[:, None, :, :]
        scores = _widen(_contract("bthd,bshd->btsh", _narrow(q), _narrow(k)))
        return ext.finish(_widen(_contract("btsh,bshd->bthd", _narrow(scores * weights), _narrow(v))))
