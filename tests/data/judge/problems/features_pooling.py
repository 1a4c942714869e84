import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean pooling over the attention mask, in the style of sentence-transformers' Pooling
    module: it reads a features dict and writes its result back into it."""

    def __init__(self):
        super().__init__()

    def forward(self, features):
        token_embeddings = features["token_embeddings"]
        mask = features["attention_mask"].unsqueeze(-1).expand(token_embeddings.size()).float()
        summed = torch.sum(token_embeddings * mask, 1)
        counts = torch.clamp(mask.sum(1), min=1e-9)
        features.update({"sentence_embedding": summed / counts})
        return features


batch_size = 4
seq_len = 16
dim = 32


def get_inputs():
    mask = torch.randint(0, 2, (batch_size, seq_len))
    mask[:, 0] = 1
    return [{"token_embeddings": torch.randn(batch_size, seq_len, dim), "attention_mask": mask}]


def get_init_inputs():
    return []
