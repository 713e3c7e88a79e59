import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for an (M, K) and a (K, N) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 128
K = 256
N = 128


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
