from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from h2dlint.copies import (
    code_of,
    enclosing_function,
    enclosing_statement,
    is_literal,
    is_sync_call,
    keywords_of,
    statements_after,
    walk_in_order,
)
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syntax import dotted_name

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst

READ_METHODS = frozenset({"tolist", "item", "numpy"})
READ_BUILTINS = frozenset({"int", "float", "bool", "print", "list", "tuple", "sum", "max", "min"})


class UnsyncedAsyncReadback(Rule):
    """
    ## What it does
    Finds a device-to-host copy with `non_blocking=True` (`t.to("cpu", non_blocking=True)`)
    whose result is read on the host (`.tolist()`, `.item()`, `.numpy()`, indexing,
    `int(...)`, `print(...)`, its truth value in `if`/`not`/`or`) at once or later in
    the same function with no synchronization in between (`torch.cuda.synchronize()`,
    `event.synchronize()`, `stream.synchronize()`, or a blocking device-to-host copy
    written out, `u.to("cpu")` / `u.to("cpu", non_blocking=False)`: it waits until the
    stream drains, the earlier copy included, when both run on the current stream).

    ## Why is this bad?
    This is a race, not a slowdown. For a CUDA source, `.to("cpu", non_blocking=True)`
    allocates a pinned host tensor and only enqueues the copy into it; the call returns
    before the GPU has written the data. Reading it before a synchronization reads
    whatever the buffer held: stale or uninitialized values, differently on every run.

    ## Example
    ```python
    next_ids = next_ids_gpu.to("cpu", non_blocking=True)
    return next_ids.tolist()
    ```

    Use instead:
    ```python
    next_ids = next_ids_gpu.to("cpu", non_blocking=True)
    copy_done = torch.cuda.Event()
    copy_done.record()
    ...  # other host work overlaps the copy
    copy_done.synchronize()
    return next_ids.tolist()
    ```

    ## Fix safety
    No fix is offered: where to wait (an event recorded right after the copy and
    synchronized just before the read, or a plain blocking copy) is the author's
    decision. A synchronization in a function the read calls is not seen; suppress with
    `# noqa: HDL401` there.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": hazard 2 (a
      non_blocking device-to-host copy read on the CPU before a sync reads garbage).
    - PyTorch: "A guide on good usage of non_blocking and pin_memory()" (device to host).
    """

    code = "HDL401"
    name = "unsynced-async-readback"
    summary = "`t.to('cpu', non_blocking=True)` read on the host before a synchronize: a race"
    call_names = frozenset({"to"})
    prefilter = ("non_blocking",)
    text_test_spares_only_parsing = True

    valid_examples = (
        Valid("import torch\ndef f(t):\n    c = t.to('cpu', non_blocking=True)\n    torch.cuda.synchronize()\n"
              "    return c.tolist()\n"),
        Valid("import torch\ndef f(t, ev):\n    c = t.to('cpu', non_blocking=True)\n    ev.record()\n"
              "    ev.synchronize()\n    return c.item()\n"),
        Valid("import torch\ndef f(t):\n    c = t.to('cpu')\n    return c.tolist()\n"),
        Valid("import torch\ndef f(t):\n    c = t.to('cpu', non_blocking=True)\n    return c\n"),
        Valid("import torch\ndef f(t):\n    c = t.to('cuda', non_blocking=True)\n    return c.tolist()\n"),
        Valid("import torch\ndef f(t, u):\n    c = t.to('cpu', non_blocking=True)\n    c = u\n    return c.tolist()\n"),
        Valid("import torch\ndef f(t, u):\n    c = t.to('cpu', non_blocking=True)\n"
              "    d = u.to(torch.device('cpu'), non_blocking=False)\n    return c.tolist(), d.tolist()\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef f(t):\n    c = t.to('cpu', non_blocking=True)\n    return c.tolist()\n", None,
                message_contains="`c.tolist()` on line 4"),
        Invalid("import torch\ndef f(t):\n    return t.to('cpu', non_blocking=True).numpy()\n", None),
        Invalid("import torch\ndef f(t, u):\n    c = t.to('cpu', non_blocking=True)\n"
                "    d = u.to('cpu', non_blocking=True)\n    return c.tolist()\n", None),
        Invalid("import torch\ndef f(a, b):\n    if not (a.any().to('cpu', non_blocking=True) or b):\n        return 1\n",
                None, message_contains="truth value"),
        Invalid("import torch\nclass A:\n    def g(self, t):\n"
                "        self.out = t.to(device='cpu', non_blocking=True)\n"
                "        if self.out[0] > 0:\n            pass\n", None, message_contains="`self.out[...]`"),
        Invalid("import torch\ndef f(t, ev):\n    c = t.to(torch.device('cpu'), non_blocking=True)\n"
                "    print(c)\n    ev.synchronize()\n", None),
    )

    @classmethod
    def candidates(cls, facts):
        # The visitor's tests, on the ast: only copies read on the host before a synchronize are parsed.
        return [call for call in facts.calls_named(cls.call_names)
                if any(keyword.arg == "non_blocking" and not (isinstance(keyword.value, ast.Constant)
                                                              and keyword.value.value is False)
                       for keyword in call.keywords)
                and _to_cpu(call) and _first_unsynced_read(facts, call) is not None]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "to":
            return
        keywords = keywords_of(node)
        non_blocking = keywords.get("non_blocking")
        if non_blocking is None or is_literal(non_blocking.value, "False"):
            return
        target = keywords["device"].value if "device" in keywords else next(
            (arg.value for arg in node.args if arg.keyword is None), None)
        if target is None or not re.fullmatch(r"""(?:torch\.device\()?["']cpu["']\)?""", code_of(target)):
            return
        start, end = self.position(node)
        site = self.context.facts.site_at(start, end)
        if site is None:
            return
        read = _first_unsynced_read(self.context.facts, site.node)
        if read is not None:
            self.report(node, f"this non_blocking device-to-host copy is read on the host ({read}) before any "
                              "synchronize: it may read data the GPU has not written yet")



def _first_unsynced_read(facts, call: ast.Call) -> str | None:
    """How the result of the copy `call` is first read on the host before any synchronize, if it is."""
    immediate = _read_of(call, facts.parents, "the copy")
    if immediate is not None:
        return f"{immediate} at once"
    statement = enclosing_statement(facts, call)
    if not isinstance(statement, ast.Assign) or statement.value is not call or len(statement.targets) != 1:
        return None
    name = dotted_name(statement.targets[0])
    if name is None:
        return None
    function = enclosing_function(facts, statement)
    for node in walk_in_order(statements_after(facts, statement, function)):
        if is_sync_call(node) or _blocking_copy_to_cpu(node):
            return None
        if isinstance(node, ast.Assign) and any(dotted_name(target) == name for target in node.targets):
            return None
        if isinstance(node, (ast.Name, ast.Attribute)) and dotted_name(node) == name:
            read = _read_of(node, facts.parents, name)
            if read is not None:
                return f"{read} on line {node.lineno}"
    return None


def _read_of(node: ast.expr, parents, name: str) -> str | None:
    """How `node` (the copied tensor) is read on the host right where it appears, if it is."""
    parent = parents.get(node)
    if isinstance(parent, ast.Attribute) and parent.attr in READ_METHODS:
        call = parents.get(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            return f"`{name}.{parent.attr}()`"
    if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
        return f"`{name}[...]`"
    if isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Name) \
            and parent.func.id in READ_BUILTINS:
        return f"`{parent.func.id}({name})`"
    if isinstance(parent, (ast.BoolOp, ast.If, ast.While, ast.IfExp, ast.Assert)) and node is not getattr(
            parent, "body", None) and node is not getattr(parent, "orelse", None) or \
            isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return f"the truth value of `{name}`"
    if isinstance(parent, ast.comprehension) and parent.iter is node or isinstance(parent, ast.For) \
            and parent.iter is node:
        return f"iterating over `{name}`"
    return None


def _blocking_copy_to_cpu(node: ast.AST) -> bool:
    """`u.to("cpu")` or `u.to("cpu", non_blocking=False)`: a copy the host waits for, and with it for everything
    queued on the stream before it."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"
            and _to_cpu(node)):
        return False
    flag = next((keyword.value for keyword in node.keywords if keyword.arg == "non_blocking"), None)
    return flag is None or isinstance(flag, ast.Constant) and flag.value is False


def _to_cpu(call: ast.Call) -> bool:
    """Whether the target of `.to(...)` is written `"cpu"` or `torch.device("cpu")` (as the visitor requires)."""
    target = next((keyword.value for keyword in call.keywords if keyword.arg == "device"),
                  call.args[0] if call.args else None)
    if isinstance(target, ast.Call) and dotted_name(target.func) == "torch.device" and len(target.args) == 1:
        target = target.args[0]
    return isinstance(target, ast.Constant) and target.value == "cpu"
