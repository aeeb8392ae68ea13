import torch


def positions(starts, device):
    return torch.tensor(starts + 1, device=device)


def replay(device, generator):
    return (positions(torch.randint(0, 99, (5,), generator=generator), device),)
