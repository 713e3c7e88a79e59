import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over `dim` of the input divided by a temperature."""

    def __init__(self, dim: int, temperature: float):
        super().__init__()
        self.dim = dim
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=self.dim)


batch_size = 128
features = 1024
dim = 1
temperature = 0.5


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [dim, temperature]
