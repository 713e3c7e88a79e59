import torch
import torch.nn as nn


class Model(nn.Module):
    """An elementwise chain: scale, add a per-column bias, exact GELU, then gate by sigmoid of the input."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        y = x * self.scale + bias
        y = torch.nn.functional.gelu(y)
        return y * torch.sigmoid(x)


batch_size = 128
features = 1024
scale = 0.75


def get_inputs():
    x = torch.randn(batch_size, features)
    bias = torch.randn(features)
    return [x, bias]


def get_init_inputs():
    return [scale]
