import torch

def add_alpha(input: torch.Tensor, other: torch.Tensor, alpha: float = 1.0, out=None) -> torch.Tensor:
    return torch.add(input, other, alpha=alpha, out=out)

##################################################################################################################################################


import torch

def test_add_alpha():
    results = {}
    rows, cols = 3, 5
    alpha = 0.25
    a = torch.randn(rows, cols, device='cuda')
    b = torch.randn(rows, cols).to('cuda')
    # Test case 1: writes into out (skipped by converters: mutates an argument)
    results["test_case_1"] = add_alpha(a, b, out=torch.empty(rows, cols, device='cuda'))
    # Test case 2: alpha from a variable
    results["test_case_2"] = add_alpha(a, b, alpha=alpha)
    return results

test_results = test_add_alpha()
