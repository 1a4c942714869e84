import torch

def no_tests(input: torch.Tensor) -> torch.Tensor:
    return input.exp()
