"""Wrong in one key: the sum over the unmasked tokens where the reference takes their mean."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def masked_mean_kernel(x_ptr, m_ptr, y_ptr, seq_len, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    d = tl.arange(0, BLOCK_D)
    m = tl.load(m_ptr + row * seq_len + t, mask=t < seq_len, other=0).to(tl.float32)
    x = tl.load(x_ptr + row * seq_len * dim + t[:, None] * dim + d[None, :],
                mask=(t[:, None] < seq_len) & (d[None, :] < dim), other=0.0)
    summed = tl.sum(x * m[:, None], axis=0)
    tl.store(y_ptr + row * dim + d, summed, mask=d < dim)


def masked_mean(x, mask):
    x, mask = x.contiguous(), mask.contiguous()
    batch, seq_len, dim = x.shape
    y = torch.empty(batch, dim, device=x.device, dtype=torch.float32)
    masked_mean_kernel[(batch,)](x, mask, y, seq_len, dim,
                                 BLOCK_T=triton.next_power_of_2(seq_len), BLOCK_D=triton.next_power_of_2(dim))
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, features):
        features["sentence_embedding"] = masked_mean(features["token_embeddings"], features["attention_mask"])
        return features
