import torch


def make_weights(values, device):
    return torch.tensor(values, requires_grad=True, device=device)


def replay(device, generator):
    values = (torch.rand(6, generator=generator) + 0.1).tolist()
    return (make_weights(values, device),)
