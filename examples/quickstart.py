"""A tiny sampler with the blocking copies h2dlint was built to find.

Run `h2dlint examples/quickstart.py` to see them, `--diff` to see the fixes.
"""

import torch


def gather_last_tokens(hidden_states: torch.Tensor, seq_lens: list[int]) -> torch.Tensor:
    last_indices = []
    offset = 0
    for n in seq_lens:
        offset += n
        last_indices.append(offset - 1)
    # Blocks the host until every kernel queued on the stream has finished.
    index = torch.tensor(last_indices, device=hidden_states.device, dtype=torch.int64)
    return hidden_states.index_select(0, index)


def temperature_table(device: torch.device) -> torch.Tensor:
    return torch.tensor([0.7, 1.0, 1.3], device="cuda")
