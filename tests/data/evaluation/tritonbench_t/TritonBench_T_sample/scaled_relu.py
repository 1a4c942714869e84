import torch
import torch.nn.functional as F

def scaled_relu(input: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
    """Rectified linear unit followed by a constant scale."""
    return F.relu(input) * scale

##################################################################################################################################################


import torch

def test_scaled_relu():
    results = {}

    # Test case 1: fixed values
    x1 = torch.tensor([-1.0, 0.0, 2.0], device='cuda')
    results["test_case_1"] = scaled_relu(x1)

    # Test case 2: random matrix, custom scale
    x2 = torch.randn(4, 8, device='cuda')
    results["test_case_2"] = scaled_relu(x2, scale=0.5)

    return results

test_results = test_scaled_relu()
