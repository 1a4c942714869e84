import torch
import torch.nn as nn


class TokenAndPosition(nn.Module):
    def __init__(self, vocab_size, dim, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)

    def forward(self, idx):
        T = idx.shape[1]
        return self.tok(idx) + self.pos(torch.arange(T))
