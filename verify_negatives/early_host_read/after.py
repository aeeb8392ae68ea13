import torch

VERIFY_NEEDS_CUDA = ("a non_blocking device-to-host copy races with the host only on a GPU; "
                     "on the CPU the copy is a no-op and both versions agree")


def token_counts(hidden):
    counts = (hidden > 0).sum(dim=1)
    # Broken: the host reads the buffer before the asynchronous copy into it has finished.
    return counts.to("cpu", non_blocking=True).clone()


def replay(device, generator):
    # Pinned and non_blocking, so the GPU is still busy with work queued before replay() when counts are copied.
    hidden = torch.randn(64, 4096, generator=generator, pin_memory=True).to(device, non_blocking=True)
    return (token_counts(hidden),)
