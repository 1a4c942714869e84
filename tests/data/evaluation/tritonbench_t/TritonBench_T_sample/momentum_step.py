import torch

def momentum_step(param: torch.Tensor, grad: torch.Tensor, buf: torch.Tensor, lr: float = 0.1, momentum: float = 0.9) -> None:
    buf.mul_(momentum).add_(grad)
    param.add_(buf, alpha=-lr)

##################################################################################################################################################


import torch

def test_momentum_step():
    results = {}
    for step in range(2):
        p = torch.randn(4, device='cuda')
        g = torch.randn(4, device='cuda')
        b = torch.zeros(4, device='cuda')
        momentum_step(p, g, b)
        results[f"step_{step}"] = p.clone()
    return results

test_results = test_momentum_step()
