# expect: timeout
# reason: compile killed
# The compiler does not finish in time: a constexpr loop that g++ evaluates for many minutes, at constant memory.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# g++ evaluates ~1e7 constexpr operations a second; the raised limit (2^34) stops it with an error after
# ~10-30 min, so a compiler that outlives its killed build still ends by itself. s only takes the values
# 0 and 1, so g++ creates no new constants and its memory stays flat (~40 MB). Assumes g++ (the `c++` on
# Linux CI); clang would refuse the flag (compile_error).
CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>

constexpr long long busy(long long n) {
    long long s = 0;
    for (long long i = 0; i < n; ++i)
        for (long long j = 0; j < n; ++j)
            for (long long k = 0; k < n; ++k) s ^= (i ^ j ^ k) & 1;
    return s;
}
constexpr long long kBusy = busy(200000);

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    y.data_ptr<float>()[0] = static_cast<float>(kBusy);
    return y;
}
"""
module = load_inline(name="fault_cpu_compile_hang", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False, extra_cflags=["-fconstexpr-ops-limit=17179869184"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
