import numpy as np
import torch


def block_table(rows, width, device):
    table = np.zeros((len(rows), width), dtype=np.int32)
    for i, row in enumerate(rows):
        table[i, :len(row)] = row
    # Broken on CUDA: "Can't pin tensor constructed from numpy".
    return torch.tensor(table, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)


def replay(device, generator):
    rows = [torch.randint(0, 99, (n,), generator=generator).tolist() for n in (3, 1, 4)]
    return (block_table(rows, 4, device),)
