from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.copies import dotted, join_args, keyword, left_unreported, shown, to_ast, torch_name, where_hot
from h2dlint.facts import LEGACY_TENSOR_DTYPES
from h2dlint.model import Applicability, Fix
from h2dlint.rule import Invalid, Rule, Valid

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst


class LegacyCudaConstructor(Rule):
    """
    ## What it does
    Finds the legacy typed constructors `torch.cuda.LongTensor(data)`,
    `torch.cuda.FloatTensor(data)`, ... (and DeepSpeed's `get_accelerator().LongTensor(data)`,
    which on CUDA is `torch.tensor(data, dtype=torch.int64, device="cuda")`, or
    `torch.cuda.LongTensor` in DeepSpeed before 0.14) called with host data (a list, a tuple, a list
    comprehension, `.tolist()`, or a local name bound only to those). A call with sizes
    (`torch.cuda.FloatTensor(3, 4)`) allocates on the device and is not reported. As
    HDL101, only code known to run every step is reported (`copies-outside-hot-code =
    true`: other code too), and never code that runs once (a constructor, loading, ...).

    ## Why is this bad?
    Like `torch.tensor(data, device="cuda")`, the constructor builds the tensor in
    pageable host memory and copies it with a blocking copy: the host waits until the
    GPU stream drains. The legacy constructors are also deprecated in favour of
    `torch.tensor(..., dtype=...)`.

    ## Example
    ```python
    index = torch.cuda.LongTensor(index_list)
    ```

    Use instead:
    ```python
    index = torch.tensor(index_list, dtype=torch.int64, pin_memory=True).to("cuda", non_blocking=True)
    ```

    ## Fix safety
    The rewrite keeps the dtype (each constructor's fixed dtype is written out) and the
    device: `"cuda"` is the current CUDA device, where the legacy constructor put the
    tensor. `pin_memory=True` is written literally: the original call already required
    CUDA, so pinning cannot fail where it ran. The fix is **safe** for literal data
    (a list, tuple, comprehension or `.tolist()` written there, or a name bound only to
    those); it is **unsafe** when the file uses several CUDA streams (the copy is then
    ordered only on the current stream). A list of floats given to an integer
    constructor is truncated by `torch.tensor(..., dtype=...)` as well. DeepSpeed's
    `get_accelerator().LongTensor(data)` gets no fix: its accelerator may be the CPU one,
    where a literal `pin_memory=True` raises, and the device to copy to is the
    accelerator's (`get_accelerator().current_device_name()`), which the author chooses.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": blocking H2D
      (legacy `torch.cuda.LongTensor(list)`), fix
      `torch.tensor(data, dtype=..., pin_memory=<guard>).to(dev, non_blocking=True)`.
    - PyTorch docs, "torch.Tensor": the legacy constructors are deprecated.
    - deepspeedai/DeepSpeed#5115 (ZeRO's overflow check: `get_accelerator().ByteTensor([overflow])`
      from a host bool became the device result, `.byte().to(device)`).
    """

    code = "HDL105"
    name = "legacy-cuda-constructor"
    summary = "`torch.cuda.LongTensor(list)` (legacy constructor) copies host data with a blocking copy"
    call_names = frozenset(LEGACY_TENSOR_DTYPES)
    # With `torch.cuda` somewhere (as written, imported from, or imported as): `from torch.cuda import LongTensor`.
    prefilter = tuple(LEGACY_TENSOR_DTYPES)

    valid_examples = (
        Valid("import torch\nx = torch.cuda.FloatTensor(3, 4)\n"),
        # Module-level code runs once, at import.
        Valid("import torch\nx = torch.cuda.LongTensor([1, 2, 3])\n"),
        Valid("import torch\nx = torch.cuda.LongTensor(5)\n"),
        Valid("import torch\nx = torch.LongTensor([1, 2])\n"),
        Valid("import torch\ndef f(t):\n    return torch.cuda.FloatTensor(t)\n"),
        Valid("import torch\ndef f(t):\n    return isinstance(t, torch.cuda.FloatTensor)\n"),
        # Module-level code runs once, at import.
        Valid("from deepspeed.accelerator import get_accelerator\nflag = get_accelerator().IntTensor([0])\n"),
        # Not DeepSpeed's accelerator: nothing says what this `get_accelerator` returns.
        Valid("def get_accelerator():\n    return object()\nfor step in range(3):\n"
              "    x = get_accelerator().ByteTensor([step])\n"),
    )
    invalid_examples = (
        Invalid("import torch\nfor step in range(3):\n    x = torch.cuda.LongTensor([1, 2, 3])\n",
                "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2, 3], dtype=torch.int64, pin_memory=True)"
                ".to(\"cuda\", non_blocking=True)\n", message_contains="blocking copy"),
        Invalid("import torch as th\ndef forward(t):\n    ids = t.tolist()\n    return th.cuda.FloatTensor(ids)\n",
                "import torch as th\ndef forward(t):\n    ids = t.tolist()\n"
                "    return th.tensor(ids, dtype=th.float32, pin_memory=True).to(\"cuda\", non_blocking=True)\n"),
        Invalid("import torch\ns = torch.cuda.Stream()\ndef forward(n):\n    return torch.cuda.BoolTensor([i > 2 for i in n])\n",
                "import torch\ns = torch.cuda.Stream()\ndef forward(n):\n"
                "    return torch.tensor([i > 2 for i in n], dtype=torch.bool, pin_memory=True)"
                ".to(\"cuda\", non_blocking=True)\n", unsafe=True),
        # DeepSpeed's accelerator abstraction (its ZeRO optimizers' per-step overflow check).
        Invalid("from deepspeed.accelerator import get_accelerator\nclass Optimizer:\n"
                "    def step(self, overflow):\n        overflow_gpu = get_accelerator().ByteTensor([overflow])\n",
                None, message_contains="`get_accelerator().ByteTensor([overflow])` (DeepSpeed's accelerator"),
        Invalid("import deepspeed\ndef step(norm):\n    return deepspeed.get_accelerator().FloatTensor([float(norm)])\n",
                None, message_contains="`deepspeed.get_accelerator().FloatTensor("),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        return ("cuda" in text or "get_accelerator" in text) and _names_a_legacy_type(text)

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        qualified = facts.qualify(dotted(node.func)) or ""
        constructor = qualified.removeprefix("torch.cuda.")
        through_accelerator = _deepspeed_accelerator_constructor(facts, node.func)
        if through_accelerator is not None:
            constructor = through_accelerator
        elif not qualified.startswith("torch.cuda.") or constructor not in LEGACY_TENSOR_DTYPES:
            return
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        data = node.args[0].value
        start, end = self.position(node)
        if not _is_host_sequence(facts, to_ast(data), start.line) \
                or left_unreported(facts, start, end, self.context.settings) is not None:
            return
        where = where_hot(facts, start.line)
        if through_accelerator is not None:
            # No fix: the accelerator may be DeepSpeed's CPU one, where a literal pin would raise, and the device
            # to copy to is the accelerator's, which only `get_accelerator()` names.
            self.report(node, f"`{shown(node.func, 40)}({shown(data, 40)})` (DeepSpeed's accelerator: a tensor "
                              "made from the data on the accelerator) copies host data to the GPU with a blocking copy"
                              f"{where}: the host waits until the GPU stream drains; keep "
                              "the value on the device, or build it with `torch.tensor(..., pin_memory=...)` and "
                              "copy it with `non_blocking=True`")
            return
        self.report(node, f"`torch.cuda.{constructor}({shown(data, 40)})` copies host data to the GPU with a "
                          f"blocking copy{where}: the host waits until the GPU stream drains",
                    self._fix(node, data, LEGACY_TENSOR_DTYPES[constructor]))

    def _fix(self, node, data, dtype) -> Fix | None:
        torch_local, extra_edits = torch_name(self)
        if torch_local is None:
            return None
        source = cst.Call(func=cst.parse_expression(f"{torch_local}.tensor"), args=join_args(list(node.args), [
            cst.Arg(data), keyword("dtype", cst.parse_expression(f"{torch_local}.{dtype}")),
            keyword("pin_memory", cst.Name("True"))]))
        replacement = cst.Call(func=cst.Attribute(value=source, attr=cst.Name("to")), args=[
            cst.Arg(cst.SimpleString('"cuda"'), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            keyword("non_blocking", cst.Name("True"))])
        edit = self.context.replace_node(node, replacement, self)
        if edit is None:
            return None
        unsafe = self.context.facts.uses_several_streams
        message = "Build the tensor in pinned memory and copy it with `non_blocking=True`"
        if unsafe:
            message += " (unsafe: this file uses several CUDA streams; the copy is ordered on the current stream only)"
        return Fix(edits=tuple(sorted([edit, *extra_edits])),
                   applicability=Applicability.UNSAFE if unsafe else Applicability.SAFE, message=message)


# DeepSpeed's accelerator abstraction: on CUDA, `get_accelerator().FloatTensor(data)` makes the tensor on the
# device from host data (`torch.tensor(..., device="cuda")`, or `torch.cuda.FloatTensor` before 0.14).
_DEEPSPEED_GET_ACCELERATOR = frozenset({"deepspeed.get_accelerator", "deepspeed.accelerator.get_accelerator",
                                        "deepspeed.accelerator.real_accelerator.get_accelerator"})


def _deepspeed_accelerator_constructor(facts, func: cst.BaseExpression) -> str | None:
    """The legacy type's name in `get_accelerator().LongTensor` (DeepSpeed's `get_accelerator` imported), else
    None."""
    if not isinstance(func, cst.Attribute) or func.attr.value not in LEGACY_TENSOR_DTYPES:
        return None
    call = func.value
    if not isinstance(call, cst.Call) or call.args:
        return None
    return func.attr.value if facts.qualify(dotted(call.func)) in _DEEPSPEED_GET_ACCELERATOR else None


_LEGACY_TYPE_STARTS = tuple(name.removesuffix("Tensor") for name in LEGACY_TENSOR_DTYPES)


def _names_a_legacy_type(text: str) -> bool:
    """What the prefilter finds (some legacy type name in the text), found from each `Tensor` instead of one read
    of the text per name."""
    start = text.find("Tensor")
    while start >= 0:
        if text.endswith(_LEGACY_TYPE_STARTS, 0, start):
            return True
        start = text.find("Tensor", start + 1)
    return False


def _is_host_sequence(facts, node: ast.expr, line: int, depth: int = 0) -> bool:
    """A list/tuple/list comprehension/`.tolist()` (data, not sizes), or a name bound only to those."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "tolist":
        return True
    if isinstance(node, ast.Name) and depth < 4:
        values = facts.bindings_at(node.id, line)
        return bool(values) and all(value is not None and _is_host_sequence(facts, value, line, depth + 1)
                                    for value in values)
    return False
