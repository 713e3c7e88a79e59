# expect: rejected
# check: S001
# Not valid Python (an unclosed call): rejected by the static check, never compiled.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

module = load_inline(name="fault_cpu_syntax_error", cpp_sources="", functions=["run"]


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
