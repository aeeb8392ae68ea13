"""Running the pinned branch of a fix on a machine without CUDA.

A fix writes `pin_memory=torch.cuda.is_available()` (or a helper of the file), so on a
CPU-only build the pinned branch never runs, and a rewrite that pins something PyTorch
cannot pin only raises on a CUDA machine. Here the guard is forced true (`force_pinning`
rewrites every `pin_memory=` argument of the fixed code to `True`) and the forms run under
`PinnedBranch`, which tells the two kinds of failure apart:

- a legal pin request fails on a CPU-only build only for want of a pinned-memory allocator,
  with torch's own message (`NO_ALLOCATOR` for factories' `pin_memory=True`, `NO_ACCELERATOR`
  for `Tensor.pin_memory()`); that one failure is retried unpinned, as if the allocator had
  pinned it (pinning changes no value);
- an illegal one is refused before an allocator is needed, with another message:
  "Can't pin tensor constructed from numpy", "... from a variable". That error, or any other
  raised by a pin-requesting call, is a crash the fix would cause on CUDA, and is recorded.

A pin request on a device other than the CPU (a factory under `torch.set_default_device` or
`with torch.device(...)`) raises on CUDA ("Only dense CPU tensors can be pinned") but passes on
the meta device and cannot be reached on a CPU-only machine, so it is recorded from the device
the call sees. (`torch.tensor` builds its data on the CPU before moving it and may not raise
there; it is recorded all the same: the pin is wasted at best.) A default-device context whose device is the CPU here (`torch.device(device)`
with a CPU `device` on this machine) is not visible at run time: the linter's static check
(`copies.may_run_under_default_device`) is what keeps fixes out of those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

# torch 2.13's messages for a legal pin request on a build without an accelerator.
NO_ALLOCATOR = "no pinned memory allocator is available"
NO_ACCELERATOR = "Cannot access accelerator device when none is available"
UNPINNABLE_DEVICES = ("cpu", "meta")  # where `pin_memory=True` is accepted; anywhere else it raises on CUDA


@dataclass
class PinCrash:
    """A pin request that would raise on CUDA."""

    call: str  # the torch function or method, e.g. "tensor", "Tensor.pin_memory"
    error: str  # "RuntimeError: Can't pin tensor constructed from numpy"

    def __str__(self) -> str:
        return f"`{self.call}` with pin_memory would raise on CUDA: {self.error}"


@dataclass
class PinStats:
    requests: int = 0  # pin-requesting calls that ran
    crashes: list[PinCrash] = field(default_factory=list)


def _name(func) -> str:
    """`torch.tensor`, `Tensor.pin_memory`: how the code calls it."""
    import torch

    name = getattr(func, "__name__", None) or repr(func)
    return f"Tensor.{name}" if getattr(torch.Tensor, name, None) is func else f"torch.{name}"


def pinned_branch_mode(stats: PinStats):
    """A `torch.overrides.TorchFunctionMode` (built here: torch is imported only when a check runs) that
    runs pin requests as a CUDA machine would accept or refuse them; see the module's docstring."""
    import torch
    from torch.overrides import TorchFunctionMode

    class PinnedBranch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            is_method = func is torch.Tensor.pin_memory
            if not (is_method or kwargs.get("pin_memory") is True):
                return func(*args, **kwargs)
            stats.requests += 1
            device = kwargs.get("device")
            device = torch.device(device).type if device is not None else torch.get_default_device().type
            if not is_method and device not in UNPINNABLE_DEVICES:
                crash = PinCrash(_name(func), f"RuntimeError: pin_memory=True for a tensor made on {device}: "
                                              "only dense CPU tensors can be pinned")
                stats.crashes.append(crash)
                raise RuntimeError(str(crash))
            try:
                return func(*args, **kwargs)
            except Exception as error:
                message = str(error)
                if is_method and NO_ACCELERATOR in message:
                    return args[0].clone()  # what pinning copies, in pageable memory
                if not is_method and NO_ALLOCATOR in message:
                    kwargs["pin_memory"] = False
                    return func(*args, **kwargs)
                stats.crashes.append(PinCrash(_name(func), f"{type(error).__name__}: {message.splitlines()[0]}"))
                raise

    return PinnedBranch()


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class _ForcePinning(cst.CSTTransformer):
    """Every `pin_memory=<guard>` argument becomes `pin_memory=True`: the branch a CUDA machine takes."""

    def leave_Arg(self, original_node, updated_node):
        if updated_node.keyword is not None and updated_node.keyword.value == "pin_memory" \
                and not (isinstance(updated_node.value, cst.Name) and updated_node.value.value == "False"):
            return updated_node.with_changes(value=cst.Name("True"))
        return updated_node


def force_pinning(node: cst.CSTNode) -> cst.CSTNode:
    return node.visit(_ForcePinning())


def force_pinning_in(text: str) -> str:
    """`text` (a module's source) with each pin guard forced true."""
    return cst.parse_module(text).visit(_ForcePinning()).code
