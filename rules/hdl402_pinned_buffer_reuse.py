from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.copies import enclosing_function, enclosing_statement, statements_after, walk_in_order
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syntax import dotted_name

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst

# Calls after which the copy has certainly finished, or which show the author orders the buffer's reuse
# against the copy on purpose (an event or stream wait, `record_stream`): the search stops there.
WAITS = frozenset({"synchronize", "wait", "wait_stream", "wait_event", "record_stream", "query", "item", "tolist",
                   "cpu"})
# In-place methods whose trailing underscore does not mean "writes the data".
NOT_DATA_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "set_"})
VIEW_METHODS = frozenset({"numpy", "narrow", "view", "select", "flatten", "reshape", "view_as", "as_strided"})


class PinnedBufferReuse(Rule):
    """
    ## What it does
    Finds a non_blocking copy from a pinned host buffer (a name or `self.<attr>` bound
    to `torch.empty(..., pin_memory=...)`, `torch.zeros(..., pin_memory=...)`, ... or to
    `x.pin_memory()`) to the device, `dst.copy_(buffer, non_blocking=True)`,
    `buffer.to(device, non_blocking=True)` or `buffer.cuda(non_blocking=True)`, after
    which the same function writes into the buffer on the host (`buffer[...] = ...`,
    `buffer.copy_(...)`, `buffer.fill_(...)`, `buffer.zero_()`, `buffer.add_(...)`,
    `buffer[:n].copy_(...)`, `np.copyto(buffer.numpy(), ...)`, `out=buffer`) with no
    synchronization in between. In a loop, the writes at the top of the next iteration
    count too.

    ## Why is this bad?
    This is a race, not a slowdown. A non_blocking copy from pinned memory only
    enqueues a DMA transfer that the GPU runs when the stream reaches it; the call
    returns at once. A host write to the buffer before the transfer has run changes the
    data the device receives: the next batch's values, half-written rows, differently
    on every run. The classic form is a staging buffer filled at the top of a loop and
    copied at the bottom: the second iteration overwrites the first copy's source.

    PyTorch's caching host allocator keeps a pinned block from being *reallocated*
    while a copy from it is in flight, but it does not stop the program from writing
    into a buffer it still holds.

    ## Example
    ```python
    staging = torch.empty(n, dtype=torch.int64, pin_memory=True)
    for batch in batches:
        staging.copy_(batch)
        ids.copy_(staging, non_blocking=True)
        model(ids)
    ```

    Use instead:
    ```python
    staging = torch.empty(n, dtype=torch.int64, pin_memory=True)
    copied = torch.cuda.Event()
    for batch in batches:
        copied.synchronize()  # the previous copy has read the buffer
        staging.copy_(batch)
        ids.copy_(staging, non_blocking=True)
        copied.record()
        model(ids)
    ```
    (or alternate between two staging buffers).

    ## Fix safety
    No fix is offered: where to wait (an event recorded after the copy and synchronized
    before the write), or whether to double-buffer, is a design decision, and a blocking
    copy would give up the overlap the code was written for.

    Not reported: a buffer bound anew between the copy and the write (a fresh
    allocation), or any `synchronize()`, `.wait()`, `wait_stream`, `record_stream`,
    `query()`, `.item()`, `.tolist()` or `.cpu()` between them. Writes in another
    function (a method called later) are not seen.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": hazard 3
      (mutating or reusing a pinned host buffer while an async H2D copy from it is in
      flight corrupts the data on the device).
    - PyTorch: "A guide on good usage of non_blocking and pin_memory()".
    - CUDA Runtime API, `cudaMemcpyAsync`: the copy from page-locked memory is
      asynchronous with respect to the host.
    """

    code = "HDL402"
    name = "pinned-buffer-reuse"
    summary = "a pinned buffer written on the host while a non_blocking copy from it may be in flight: a race"
    call_names = frozenset({"copy_", "to", "cuda"})
    prefilter = ("non_blocking",)
    text_test_spares_only_parsing = True
    default_enabled = False  # no finding on real code yet to measure its precision on (docs/precision/copies.md)

    valid_examples = (
        Valid("import torch\ndef f(dst, xs):\n    buf = torch.empty(4, pin_memory=True)\n    for x in xs:\n"
              "        buf.copy_(x)\n        dst.copy_(buf, non_blocking=True)\n        torch.cuda.synchronize()\n"),
        Valid("import torch\ndef f(dst, xs, ev):\n    buf = torch.empty(4, pin_memory=True)\n    for x in xs:\n"
              "        ev.synchronize()\n        buf.copy_(x)\n        dst.copy_(buf, non_blocking=True)\n"
              "        ev.record()\n"),
        Valid("import torch\ndef f(dst, xs):\n    for x in xs:\n        buf = torch.empty(4, pin_memory=True)\n"
              "        buf.copy_(x)\n        dst.copy_(buf, non_blocking=True)\n"),
        Valid("import torch\ndef f(dst, x):\n    buf = torch.empty(4)\n    dst.copy_(buf, non_blocking=True)\n"
              "    buf.zero_()\n"),
        Valid("import torch\ndef f(dst, x):\n    buf = torch.empty(4, pin_memory=True)\n    dst.copy_(buf)\n"
              "    buf.zero_()\n"),
        Valid("import torch\ndef f(x):\n    buf = torch.empty(4, pin_memory=True)\n    buf[0] = 1\n"
              "    out = buf.to('cuda', non_blocking=True)\n    return out\n"),
        Valid("import torch\ndef f(x):\n    buf = x.pin_memory()\n    out = buf.cuda(non_blocking=True)\n"
              "    buf = torch.zeros(4, pin_memory=True)\n    buf.fill_(1)\n    return out\n"),
        Valid("import torch\ndef f(dst, x):\n    buf = torch.empty(4, pin_memory=True)\n"
              "    dst.copy_(buf, non_blocking=True)\n    print(buf.sum())\n"),
    )
    invalid_examples = (
        Invalid("import torch\ndef f(dst, xs):\n    buf = torch.empty(4, pin_memory=True)\n    for x in xs:\n"
                "        buf.copy_(x)\n        dst.copy_(buf, non_blocking=True)\n", None,
                message_contains="line 5"),
        Invalid("import torch\nclass Loader:\n    def __init__(self):\n"
                "        self.host = torch.zeros(8, dtype=torch.int32, pin_memory=torch.cuda.is_available())\n"
                "    def load(self, ids):\n        out = self.host.to('cuda', non_blocking=True)\n"
                "        self.host[0] = 0\n        return out\n", None, message_contains="`self.host[...] = ...`"),
        Invalid("import torch\ndef f(x, n):\n    buf = x.pin_memory()\n    out = buf.cuda(non_blocking=True)\n"
                "    buf[:n].fill_(0)\n    return out\n", None),
        Invalid("import numpy as np\nimport torch\ndef f(dst, a):\n    buf = torch.empty(4, pin_memory=True)\n"
                "    dst.copy_(buf, non_blocking=True)\n    np.copyto(buf.numpy(), a)\n", None,
                message_contains="np.copyto"),
        Invalid("import torch\ndef f(dst, a, b):\n    buf = torch.empty(4, pin_memory=True)\n"
                "    dst.copy_(buf, non_blocking=True)\n    torch.add(a, b, out=buf)\n", None),
        Invalid("import torch\ndef f(dst, xs):\n    buf = torch.empty(4, pin_memory=True)\n    while xs:\n"
                "        buf += xs.pop()\n        dst.copy_(buf, non_blocking=True)\n", None),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        return "non_blocking" in text and "pin_memory" in text

    @classmethod
    def candidates(cls, facts):
        return [call for call in facts.calls_named(cls.call_names) if _racing_write(facts, call) is not None]

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        found = self.own_site(node)
        if found is None:
            return
        site, start = found
        buffer, write, line = _racing_write(facts, site.node)
        when = "in the next iteration of the loop" if line <= start.line else "later"
        self.report(node, f"non_blocking copy from the pinned buffer `{buffer}`, which is written on the host {when} "
                          f"({write} on line {line}) with no synchronize in between: the copy may read the new data")


def _racing_write(facts, call: ast.Call) -> tuple[str, str, int] | None:
    """For a non_blocking copy from a pinned buffer: (the buffer's name, the write, its line) of the first
    host write to the buffer that may run before the copy has; None when there is none."""
    if not any(keyword.arg == "non_blocking" and not (isinstance(keyword.value, ast.Constant)
                                                      and keyword.value.value is False) for keyword in call.keywords):
        return None
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    source = (call.args[0] if call.args else None) if func.attr == "copy_" else func.value
    buffer = dotted_name(source) if isinstance(source, (ast.Name, ast.Attribute)) else None
    if buffer is None or not _is_pinned_buffer(facts, source, call.lineno):
        return None
    statement = enclosing_statement(facts, call)
    function = enclosing_function(facts, statement)
    for node in walk_in_order(_statements_that_may_follow(facts, statement, function)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WAITS \
                and dotted_name(node.func.value) != buffer:
            return None
        if _rebinds(node, buffer):
            return None
        write = _write_to(node, buffer, facts)
        if write is not None:
            return buffer, write, node.lineno
    return None


def _statements_that_may_follow(facts, statement: ast.stmt, function: ast.AST) -> list[ast.stmt]:
    """The statements that may run after `statement` before the function returns, in order: the rest of
    the innermost loop's body, then that body up to the statement (the next iteration), then what follows."""
    loop = facts.parents.get(statement)
    while loop is not None and loop is not function and not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        loop = facts.parents.get(loop)
    if loop is None or loop is function:
        return statements_after(facts, statement, function)
    next_iteration = []
    for body_statement in loop.body:
        next_iteration.append(body_statement)
        if body_statement.lineno <= statement.lineno <= (body_statement.end_lineno or body_statement.lineno):
            break
    return [*statements_after(facts, statement, loop), *next_iteration, *statements_after(facts, loop, function)]


def _is_pinned_buffer(facts, source: ast.expr, line: int) -> bool:
    if isinstance(source, ast.Name):
        values = facts.bindings_at(source.id, line)
    elif isinstance(source.value, ast.Name) and source.value.id == "self":
        bindings = facts.self_attribute_bindings(source.attr, line)
        values = bindings and [binding.value for binding in bindings]
    else:
        return False
    name = dotted_name(source)
    # Updates in place (`buf += x`) keep a pinned buffer pinned; some binding must allocate one.
    pinned = [value is not None and _allocates_pinned(facts, value) for value in values or ()]
    return any(pinned) and all(is_pinned or (value is not None and _updates(value, name))
                               for is_pinned, value in zip(pinned, values, strict=True))


def _updates(value: ast.expr, name: str) -> bool:
    """`name op ...`: how h2dlint records the binding made by `buffer += ...`, which writes in place."""
    return isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name) and value.left.id == name


def _allocates_pinned(facts, value: ast.expr) -> bool:
    """`torch.<factory>(..., pin_memory=<not False>)` or `x.pin_memory()`."""
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr == "pin_memory":
        return True
    pin = next((keyword.value for keyword in value.keywords if keyword.arg == "pin_memory"), None)
    return pin is not None and not (isinstance(pin, ast.Constant) and pin.value is False) and \
        (facts.qualify(dotted_name(value.func)) or "").startswith("torch.")


def _rebinds(node: ast.AST, buffer: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
    return any(dotted_name(target) == buffer for target in targets if isinstance(target, (ast.Name, ast.Attribute)))


def _write_to(node: ast.AST, buffer: str, facts) -> str | None:
    """How `node` writes into `buffer`'s data on the host, if it does."""
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(node, ast.AugAssign) and dotted_name(target) == buffer:
                return f"`{buffer} {_operator(node.op)}= ...`"
            if isinstance(target, ast.Subscript) and _is_view_of(target.value, buffer):
                return f"`{buffer}[...] = ...`"
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_") \
            and func.attr not in NOT_DATA_WRITES and _is_view_of(func.value, buffer):
        return f"`{buffer}.{func.attr}(...)`"
    if any(keyword.arg == "out" and _is_view_of(keyword.value, buffer) for keyword in node.keywords):
        return f"`out={buffer}`"
    if (facts.qualify(dotted_name(func)) or "") == "numpy.copyto" and node.args and _is_view_of(node.args[0], buffer):
        return "`np.copyto(...)`"
    return None


def _is_view_of(node: ast.expr, buffer: str) -> bool:
    """`node` is the buffer, or a view of its memory: `buffer[...]`, `buffer.numpy()`, `buffer.view(...)`..."""
    while True:
        if isinstance(node, (ast.Name, ast.Attribute)) and dotted_name(node) == buffer:
            return True
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS:
            node = node.func.value
        else:
            return False


def _operator(operator: ast.operator) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(operator), "op")
