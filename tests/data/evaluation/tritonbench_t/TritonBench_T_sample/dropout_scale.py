import torch
import torch.nn.functional as F

def dropout_scale(input: torch.Tensor, scale: float, p: float = 0.5, training: bool = True) -> torch.Tensor:
    return F.dropout(input * scale, p=p, training=training)

##################################################################################################################################################


import torch
torch.manual_seed(0)

def test_dropout_scale():
    results = {}
    x = torch.randn(16, device='cuda')
    # Test case 1: training mode (random masks)
    results["test_case_1"] = dropout_scale(x, 3.0)
    # Test case 2: evaluation mode
    training = False
    results["test_case_2"] = dropout_scale(x, 3.0, 0.5, training)
    return results

test_results = test_dropout_scale()
