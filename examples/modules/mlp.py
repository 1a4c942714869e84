"""Feed-forward blocks."""
import torch
import torch.nn as nn
import torch.nn.functional as F

HIDDEN_MULT = 2  # hidden width = HIDDEN_MULT * dim


def _hidden(dim: int) -> int:
    return dim * HIDDEN_MULT


class MLP(nn.Module):
    """Linear -> GELU -> Linear."""

    def __init__(self, dim: int, hidden: int = 64, dropout: float = 0.0):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


class ResidualMLP(MLP):
    """An MLP with a skip connection and a pre-norm."""

    def __init__(self, dim: int):
        super().__init__(dim, _hidden(dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + super().forward(self.norm(x))
