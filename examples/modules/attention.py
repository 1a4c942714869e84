import math

import torch
import torch.nn as nn

NEG_INF = -1e9


def scaled_scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


class SelfAttention(nn.Module):
    """Multi-head self-attention with an optional causal mask."""

    def __init__(self, dim, num_heads=4, causal=False):
        super().__init__()
        assert dim % num_heads == 0
        self.num_heads = num_heads
        self.causal = causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = scaled_scores(q, k)
        if self.causal:
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            att = att.masked_fill(mask, NEG_INF)
        out = att.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class CrossScores(nn.Module):
    def forward(self, q, k):
        return torch.softmax(scaled_scores(q, k), dim=-1)
