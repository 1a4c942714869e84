import torch

def lerp_weighted(start: torch.Tensor, end: torch.Tensor, weight: float) -> torch.Tensor:
    return torch.lerp(start, end, weight)

print("reference loaded")  # top-level noise, dropped by the converter

##################################################################################################################################################


import torch

def test_lerp_weighted():
    results = {}
    start = torch.tensor([[0.0, 1.0], [2.0, 3.0]], device='cuda')
    end = start * 2 + 1
    results["test_case_1"] = lerp_weighted(start, end, 0.5)
    return results

test_results = test_lerp_weighted()
