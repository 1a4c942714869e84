import torch.nn as nn

class Bad(nn.Module):
    def forward(self, x):
        return x  # café in latin-1 without a coding line
