from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.copies import (
    CONSTANT_UPLOAD_KEYWORDS,
    code_of,
    constant_upload,
    dotted,
    enclosing_statement,
    join_args,
    keyword,
    keywords_of,
    left_unreported,
    may_call_tensor_with_device,
    shown,
    to_ast,
    torch_name,
    where_hot,
)
from h2dlint.facts import Device
from h2dlint.model import Applicability, Fix
from h2dlint.placement import classify_device
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syntax import dotted_name

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst

# The dtype torch.tensor infers from a Python literal. Floats follow torch.get_default_dtype(), as the
# factories do, so no dtype is written for them.
INFERRED_DTYPE = {int: "int64", bool: "bool", float: None}


class ConstantUpload(Rule):
    """
    ## What it does
    Finds `torch.tensor(c, device=...)` where `c` is a numeric or bool literal, or a
    (nested) list of the same literal (`0`, `[1.0]`, `[[0, 0]]`, `True`), and the
    device is, or may be, a CUDA GPU.

    ## Why is this bad?
    `torch.tensor` builds the constant in pageable host memory and copies it to the
    device with a blocking copy: the host waits until the GPU stream drains, for a
    value that needs no copy at all. `torch.zeros`, `torch.ones` and `torch.full`
    with the same `device=` fill the tensor with a kernel on the device; nothing
    crosses the bus and the host does not wait.

    As HDL101, only code known to run every step is reported (`copies-outside-hot-code
    = true`: other code too). Code that runs once per model (a constructor, `main`, a
    loading function, or, by the project model, a function only they call), once per test (a test module or
    a `test_*` function), once in a while (under a periodic guard, filling a
    cache or setting up lazily behind a flag, see HDL101), or in a function named for
    set-up, export, a test or a benchmark (see HDL101) is not reported: the copy
    does not repeat every step. Nor is a block no call of the project takes (see
    HDL101), which never runs. Nor is a constant that is a fallback: returned by an
    early exit (`if not mask.any(): return torch.tensor(0.0, device=d)`, with the
    function's own work after the `if`) or made in an `except` handler. Such a branch
    serves a degenerate input (nothing to count, an empty batch, a failed search), not
    the step's usual work.

    ## Example
    ```python
    zero = torch.tensor(0, device=hidden.device)
    mask = torch.tensor([[True, True]], device="cuda")
    ```

    Use instead:
    ```python
    zero = torch.zeros((), dtype=torch.int64, device=hidden.device)
    mask = torch.ones((1, 2), dtype=torch.bool, device="cuda")
    ```

    ## Fix safety
    The fix is always **safe**: the factory makes a tensor with the same values,
    shape (`()` for a scalar: still 0-d), dtype and device. `torch.tensor` infers
    `int64` from ints and `bool` from bools, while `torch.zeros`/`torch.ones` default to
    the floating default dtype, so the fix writes `dtype=torch.int64` / `torch.bool`
    unless a `dtype=` was given (then it is kept). For floats both follow
    `torch.get_default_dtype()`, so no dtype is added. `requires_grad=` is kept: the
    factory's result is a leaf, as `torch.tensor`'s was. Values other than 0 and 1 use
    `torch.full(shape, value, ...)`; `-0.0` keeps its sign through `full`.

    This rule takes precedence over HDL101 on these calls: HDL101 does not report a
    call this rule reports.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": constant upload
      (`torch.tensor(0, device=cuda)` is an H2D copy for a constant; `torch.tensor`
      infers int64 / float32 / bool, hazard 5).
    - PyTorch docs: `torch.tensor` ("infers dtype from data"), `torch.full`.
    """

    code = "HDL103"
    name = "constant-upload"
    summary = "`torch.tensor(<constant>, device=<gpu>)` copies a constant from the host; use a factory"
    call_names = frozenset({"tensor"})
    prefilter = ("tensor",)
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import torch\nx = torch.tensor(0, device='cpu')\n"),
        Valid("import torch\nclass Head:\n    def __init__(self):\n        self.zero = torch.tensor(0, device='cuda')\n"),
        Valid("import torch\nx = torch.tensor([0, 1], device='cuda')\n"),
        Valid("import torch\nx = torch.tensor([0, 0.0], device='cuda')\n"),
        Valid("import torch\nx = torch.tensor([[0, 0], [0]], device='cuda')\n"),
        Valid("import torch\nx = torch.tensor([], device='cuda')\n"),
        Valid("import torch\nx = torch.tensor(0)\n"),
        Valid("import torch\nx = torch.tensor(0, device='cuda', pin_memory=False)\n"),
        Valid("import torch\nx = torch.tensor(1j, device='cuda')\n"),
        Valid("import torch\ndef loss(x, mask):\n    if not mask.any():\n"
              "        return torch.tensor(0.0, device=x.device)\n    return x[mask].mean()\n"),
        Valid("import torch\ndef forward(losses, mask):\n    n = mask.sum()\n"
              "    return losses.sum() / n if n > 0 else torch.tensor(0.0, device=losses.device)\n"),
        Valid("import torch\ndef best(x):\n    try:\n        t = x.argmax()\n    except ValueError:\n"
              "        t = torch.tensor(0, device=x.device)\n    return t\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef forward(h):\n    return torch.tensor(0, device=h.device)\n",
                "import torch\ndef forward(h):\n    return torch.zeros((), dtype=torch.int64, device=h.device)\n"),
        Invalid("import torch\ndef forward(x, weight):\n    if weight is None:\n"
                "        return x.sum()\n    return torch.tensor(0.0, device=x.device)\n",
                "import torch\ndef forward(x, weight):\n    if weight is None:\n"
                "        return x.sum()\n    return torch.zeros((), device=x.device)\n"),
        Invalid("import torch\ndef forward(kind, d):\n    if kind == 'a':\n        return torch.tensor(2.0, device=d)\n"
                "    raise ValueError(kind)\n",
                "import torch\ndef forward(kind, d):\n    if kind == 'a':\n        return torch.full((), 2.0, device=d)\n"
                "    raise ValueError(kind)\n"),
        Invalid("import torch\ndef forward(x, enabled):\n    if not enabled:\n"
                "        return torch.tensor(0.0, device=x.device)\n",
                "import torch\ndef forward(x, enabled):\n    if not enabled:\n"
                "        return torch.zeros((), device=x.device)\n"),
        Invalid("import torch\nfor step in range(3):\n    x = torch.tensor([1.0], device='cuda')\n",
                "import torch\nfor step in range(3):\n    x = torch.ones((1,), device='cuda')\n",
                message_contains="constant"),
        Invalid("import torch\nfor step in range(3):\n    x = torch.tensor([[True, True]], device='cuda')\n",
                "import torch\nfor step in range(3):\n    x = torch.ones((1, 2), dtype=torch.bool, device='cuda')\n"),
        Invalid("import torch as th\ndef forward(d):\n    return th.tensor(-1, dtype=th.int32, device=d)\n",
                "import torch as th\ndef forward(d):\n    return th.full((), -1, dtype=th.int32, device=d)\n"),
        Invalid("import torch\ndef forward(d):\n    return torch.tensor([0.5, 0.5], device=d, requires_grad=True)\n",
                "import torch\ndef forward(d):\n    return torch.full((2,), 0.5, device=d, requires_grad=True)\n"),
        Invalid("from torch import tensor\ndef forward(d):\n    for _ in range(3):\n        yield tensor(False, device=d)\n",
                "import torch\nfrom torch import tensor\ndef forward(d):\n    for _ in range(3):\n"
                "        yield torch.zeros((), dtype=torch.bool, device=d)\n",
                message_contains="in a loop"),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        return may_call_tensor_with_device(text)

    @classmethod
    def candidates(cls, facts):
        # The argument shapes `constant_upload` accepts, checked loosely on the ast: `torch.tensor` with one
        # literal-looking positional argument and `device=` (not a host one), no other keywords.
        return [call for call in facts.calls_named(cls.call_names)
                if len(call.args) == 1 and isinstance(call.args[0], _LITERAL_LOOKING)
                and {keyword.arg for keyword in call.keywords} >= {"device"}
                and {keyword.arg for keyword in call.keywords} <= CONSTANT_UPLOAD_KEYWORDS
                and facts.qualify(dotted_name(call.func)) == "torch.tensor"
                and classify_device(facts, next(keyword.value for keyword in call.keywords if keyword.arg == "device"),
                                          call.lineno) is not Device.NOT_CUDA]

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        if facts.qualify(dotted(node.func)) != "torch.tensor":
            return
        fill = constant_upload(node)
        if fill is None:
            return
        keywords = keywords_of(node)
        start, end = self.position(node)
        device = classify_device(facts, to_ast(keywords["device"].value), start.line)
        if device is Device.NOT_CUDA or left_unreported(facts, start, end, self.context.settings) is not None:
            return
        site = facts.site_at(start, end)
        if site is not None and _fallback(facts, site.node):
            return
        where = where_hot(facts, start.line)
        target = "a CUDA device" if device is Device.CUDA else f"`{shown(keywords['device'].value)}`"
        message = (f"`torch.tensor({shown(fill.value) if not fill.shape else '...'})` uploads a constant to "
                   f"{target} with a blocking copy{where}: a factory fills it on the "
                   "device with no copy and no wait")
        self.report(node, message, self._fix(node, fill, keywords))

    def _fix(self, node, fill, keywords):
        torch_local, extra_edits = torch_name(self)
        if torch_local is None:
            return None
        value = code_of(fill.value)
        if value in ("0", "0.0", "False"):
            factory, fill_args = "zeros", []
        elif value in ("1", "1.0", "True"):
            factory, fill_args = "ones", []
        else:
            factory, fill_args = "full", [cst.Arg(fill.value)]
        shape = "()" if not fill.shape else "(" + ", ".join(map(str, fill.shape)) + ("," if len(fill.shape) == 1
                                                                                    else "") + ")"
        new_args = [cst.Arg(cst.parse_expression(shape)), *fill_args]
        inferred = INFERRED_DTYPE[fill.kind]
        if "dtype" not in keywords and inferred is not None:
            new_args.append(keyword("dtype", cst.parse_expression(f"{torch_local}.{inferred}")))
        new_args += [arg for arg in node.args if arg.keyword is not None]
        replacement = cst.Call(func=cst.parse_expression(f"{torch_local}.{factory}"),
                               args=join_args(list(node.args), new_args))
        edit = self.context.replace_node(node, replacement, self)
        if edit is None:
            return None
        return Fix(edits=tuple(sorted([edit, *extra_edits])), applicability=Applicability.SAFE,
                   message=f"Fill the constant on the device with `torch.{factory}`")


_LITERAL_LOOKING = (ast.Constant, ast.UnaryOp, ast.List, ast.Tuple)


def _fallback(facts, call: ast.Call) -> bool:
    """Whether the constant is a fallback value: in a statement of an `except` handler, or returned by the last
    statement of an `if` branch that more work of the function follows (an early exit). Not when only a `raise`
    follows (`if kind == "a": return ...` then `raise ValueError(kind)`: each branch is a normal result), nor in
    a loop (a search's `return` on a hit is how the loop ends)."""
    parents = facts.parents
    statement = enclosing_statement(facts, call)
    branch = parents.get(statement)
    if isinstance(branch, ast.ExceptHandler):
        return True
    if not (isinstance(statement, ast.Return) and isinstance(branch, ast.If)
            and statement in (branch.body[-1], branch.orelse[-1] if branch.orelse else None)):
        return False
    inner: ast.AST = branch
    while not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
        outer = parents[inner]
        if isinstance(outer, (ast.For, ast.AsyncFor, ast.While)):
            return False
        for body in _bodies(outer):
            if inner in body and any(not isinstance(after, ast.Raise) for after in body[body.index(inner) + 1:]):
                return True
        inner = outer
    return False


def _bodies(node: ast.AST):
    """The statement lists of a compound statement (or a function)."""
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if isinstance(body, list):
            yield body
