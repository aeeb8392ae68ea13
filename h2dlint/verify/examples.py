"""Replaying the rules' own examples: each documented fix, on its pinned branch, against the original.

An example is a small module (`Invalid.code`) and its fixed text (`Invalid.expected_fix`). Both are run on
the CPU: the original as written, the fixed one with its pin guards forced true under PinnedBranch
(pinning.py). CUDA devices are read as the CPU (`redirect_cuda`), so `.to("cuda")` and `device="cuda"` run
here. Module-level code runs when the module does; each module-level function is called with every
combination of stand-in arguments (an int, a Python list, a numpy array, a tensor, the string "cpu") that
the original function accepts. The original runs under PinnedBranch too, so its own legal pin requests
(`x.pin_memory()`) run here; only the fixed form's refused ones count. A pin request torch refuses for
such arguments is a crash the fix would cause on CUDA for inputs the original handles: a safe fix must
have none, and an unsafe one must say why (its message names what cannot be pinned).
"""

from __future__ import annotations

import inspect
import itertools
import types
import warnings
from dataclasses import dataclass, field

from .pinning import PinStats, force_pinning_in, pinned_branch_mode
from .runtime import differences

MAX_PARAMETERS = 4  # stand-ins are tried in every combination: 5 kinds, up to 625 calls a function


@dataclass
class ExampleReplay:
    runs: int = 0  # calls (or module runs) where the original ran and the pinned branch was compared
    pin_requests: int = 0
    crashes: list[str] = field(default_factory=list)  # "f(tensor): `torch.tensor` with pin_memory would raise ..."
    differences: list[str] = field(default_factory=list)


def stand_ins():
    """The kinds of argument tried for each parameter (a numpy array only where numpy is installed)."""
    import torch

    kinds = {"int": 3, "list": [3, 1, 2], "tensor": torch.tensor([3, 1, 2]), "device": "cpu"}
    try:
        import numpy
    except ImportError:
        return kinds
    return {**kinds, "numpy": numpy.array([3, 1, 2])}


def redirect_cuda():
    """A TorchFunctionMode that reads every CUDA device as the CPU, so code written for a GPU runs here."""
    import torch
    from torch.overrides import TorchFunctionMode

    def on_cpu(value):
        if isinstance(value, torch.device) and value.type == "cuda" or \
                isinstance(value, str) and value.split(":")[0] == "cuda" or \
                isinstance(value, int) and not isinstance(value, bool):
            return "cpu"
        return value

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                return args[0].clone()
            if "device" in kwargs:
                kwargs["device"] = on_cpu(kwargs["device"])
            if func is torch.Tensor.to:
                args = (args[0], *(on_cpu(arg) for arg in args[1:]))
            return func(*args, **kwargs)

    return CudaOnCpu()


def replay_example(original_code: str, fixed_code: str) -> ExampleReplay:
    """Runs `original_code` and the pinned branch of `fixed_code` side by side (see the module's docstring)."""
    result = ExampleReplay()
    original = _run_module(original_code, result, pinned=False)
    if original is None:
        return result  # it needs what is not here (a GPU, another package): nothing to compare with
    fixed = _run_module(force_pinning_in(fixed_code), result, pinned=True)
    if fixed is None:
        return result
    import torch

    tensors = {name: value for name, value in vars(original).items() if isinstance(value, torch.Tensor)}
    if tensors:  # module-level code, run both ways
        result.runs += 1
        for name, value in tensors.items():
            result.differences.extend(f"module: {text}" for text in differences(value, vars(fixed).get(name), name))
    for name, function in list(vars(original).items()):  # a warning adds `__warningregistry__` to them
        candidate = vars(fixed).get(name)
        if not inspect.isfunction(function) or function.__module__ != original.__name__ or candidate is None:
            continue
        parameters = list(inspect.signature(function).parameters)
        if len(parameters) > MAX_PARAMETERS:
            continue
        kinds = stand_ins()
        for combination in itertools.product(kinds, repeat=len(parameters)):
            call = f"{name}({', '.join(combination)})"
            try:
                expected = _call(function, [stand_ins()[kind] for kind in combination], PinStats())
            except Exception:
                continue  # arguments the original does not accept
            stats = PinStats()
            try:
                actual = _call(candidate, [stand_ins()[kind] for kind in combination], stats)
            except Exception as error:
                if not stats.crashes:
                    result.differences.append(f"{call}: the fixed form raised {type(error).__name__}: {error}")
            else:
                result.runs += 1
                result.differences.extend(f"{call}: {text}" for text in differences(expected, actual))
            result.pin_requests += stats.requests
            result.crashes.extend(f"{call}: {crash}" for crash in stats.crashes)
    return result


def _run_module(code: str, result: ExampleReplay, pinned: bool) -> types.ModuleType | None:
    """The module made by running `code` (`pinned`: the fixed one); None when it cannot run here."""
    module = types.ModuleType(f"h2dlint_example_{'fixed' if pinned else 'original'}")
    stats = PinStats()
    try:
        _call(lambda: exec(compile(code, "example.py", "exec", dont_inherit=True), module.__dict__), [], stats)
    except Exception as error:
        if pinned and stats.crashes:
            result.crashes.extend(f"module: {crash}" for crash in stats.crashes)
        elif pinned:
            result.differences.append(f"module: the fixed form raised {type(error).__name__}: {error}")
        return None
    finally:
        if pinned:
            result.pin_requests += stats.requests
    return module


def _call(function, arguments: list, stats: PinStats):
    """`function(*arguments)` with CUDA read as the CPU, under PinnedBranch."""
    with redirect_cuda(), pinned_branch_mode(stats), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's advice on `torch.tensor(tensor)` for every stand-in tensor
        value = function(*arguments)
        return list(value) if inspect.isgenerator(value) else value
