from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from h2dlint.copies import copy_of, fresh_host_factory, is_literal, join_args, keywords_of, shown
from h2dlint.facts import Device
from h2dlint.gaps import TokensApart
from h2dlint.hotness import context_at, in_test_code
from h2dlint.model import Applicability, Fix
from h2dlint.rule import Invalid, Rule, Valid
from h2dlint.syntax import dotted_name

if TYPE_CHECKING:
    import libcst as cst
else:
    from h2dlint.deferred import libcst as cst

# A closing parenthesis, then `.to` / `.cuda`: a copy of a call's result (or of a parenthesized one), which a
# candidate is.
_COPY_OF_CALL = TokensApart(r"\)", r"\.", r"(?:to|cuda)\b")
# What makes the copy's result a leaf again, or shows the non-leaf is intended.
LEAF_AGAIN = frozenset({"requires_grad_", "detach", "detach_"})


class CopyMakesNonLeaf(Rule):
    """
    ## What it does
    Finds a tensor created with `requires_grad=True` on the host and then copied to a
    device: `torch.tensor(x, requires_grad=True).to(device)`,
    `torch.randn(n, requires_grad=True).cuda()`.

    ## Why is this bad?
    This is a correctness bug, not a slowdown. The leaf (the tensor autograd
    accumulates `.grad` into) is the host tensor, an unreachable temporary. The
    device tensor is the result of a copy: not a leaf, so its `.grad` stays `None`
    after `backward()` (PyTorch warns when it is read), and an optimizer refuses it.
    It is also the trap a naive pin_memory rewrite of
    `torch.tensor(x, requires_grad=True, device=cuda)` falls into.

    ## Example
    ```python
    weight = torch.randn(16, requires_grad=True).to(device)
    loss(weight).backward()
    weight.data -= lr * weight.grad  # TypeError: weight.grad is None
    ```

    Use instead:
    ```python
    weight = torch.randn(16).to(device).requires_grad_()
    ```

    ## Fix safety
    The fix moves `requires_grad` after the copy as `.requires_grad_()`, so the device
    tensor is the leaf. It is **unsafe**, because it changes behaviour on purpose: the
    result becomes a leaf, `.grad` is now filled, and in-place operations on it under
    autograd now raise as they do for any leaf that requires grad. When the device
    is the CPU, `.to("cpu")` returns its input and nothing changes.

    Not reported when the result is wrapped in `nn.Parameter` (a leaf anyway) or
    followed by `.requires_grad_()` / `.detach()`, nor where nothing can see the missing
    `.grad`: the result is bound to a local name (or to an attribute) that the function
    (or the file) only computes with, as an operand, a torch function's argument, a
    method's receiver or an index, never reading its `.grad` nor handing it on (returned,
    put in a list, passed to an optimizer or to other code). Such a tensor seeds values
    or carries a gradient on to other leaves (`eta * y + (1 - eta) * x`): the code works,
    though each `backward()` still copies the gradient back to the host leaf. A use in
    another file is not seen. In tests, benchmarks, profiling or export code (a test
    module or a `test_*` function, see HDL101) only a `.grad` read counts: there a tensor
    handed on only seeds values. A test that compares `w.grad` with a reference is
    reported: two `None`s compare equal (`torch.testing.assert_close`), so such a test
    passes without testing anything.

    Nor where the function calls `.retain_grad()` on it: a non-leaf on purpose, whose
    `.grad` autograd fills.

    ## References
    - h2dlint reference "What makes PyTorch code stall the GPU stream": hazard 4 (the
      copy of a `requires_grad=True` tensor is not a leaf; move `requires_grad` after
      the copy).
    - PyTorch docs: `torch.Tensor.is_leaf` (the `.cuda()` example).
    """

    code = "HDL404"
    name = "copy-makes-non-leaf"
    summary = "`torch.tensor(x, requires_grad=True).to(device)` is not a leaf: its `.grad` stays None"
    call_names = frozenset({"cuda", "to"})
    prefilter = TokensApart("requires_grad", "=")
    text_test_spares_only_parsing = True

    valid_examples = (
        # A legacy tensor type may be an integer one, whose result takes no gradient: not this rule's.
        Valid("import torch\ndef make():\n    g = torch.zeros(3, requires_grad=True).type(torch.cuda.HalfTensor)\n"
              "    g.sum().backward()\n    return g.grad\n"),
        Valid("import torch\ndef f(device):\n    return torch.tensor([1.0]).to(device).requires_grad_()\n"),
        Valid("import torch\ndef f(device):\n    return torch.nn.Parameter(torch.zeros(3, requires_grad=True).to(device))\n"),
        Valid("import torch\ndef f(device):\n    return torch.zeros(3, requires_grad=True).to(device).detach()\n"),
        Valid("import torch\ndef f():\n    return torch.zeros(3, requires_grad=True).to('cpu')\n"),
        Valid("import torch\ndef test_ddp(device):\n    w = torch.randn(4, requires_grad=True).to(device)\n"
              "    return w.clone()\n"),
        Valid("import torch\ndef f(device):\n    return torch.zeros(3, requires_grad=False).to(device)\n"),
        # Nothing reads the missing `.grad`: the tensor only carries a gradient on to `x` and `y`.
        Valid("import torch\ndef f(x, y):\n    eta = torch.rand(1, requires_grad=True).to(x.device)\n"
              "    return eta * x + (1 - eta) * y\n"),
        Valid("import torch\nclass Mix:\n    def __init__(self, device):\n"
              "        self.mu = torch.randn(3, requires_grad=True).cuda()\n"
              "    def step(self, x):\n        return x - self.mu\n"),
        # A non-leaf on purpose: `retain_grad()` makes autograd fill its `.grad`.
        Valid("import torch\ndef fit(x, device):\n    w = torch.zeros(3, requires_grad=True).to(device)\n"
              "    w.retain_grad()\n    (w * x).sum().backward()\n    return w.grad\n"),
        Valid("import torch\ndef f():\n    return torch.zeros(3, requires_grad=True).to(torch.float16)\n"),
    )
    invalid_examples = (
        # A test comparing gradients: `w.grad` is None, and so may be the reference's.
        Invalid("import torch\ndef test_grad(device, ref):\n    w = torch.randn(4, requires_grad=True).to(device)\n"
                "    (w * 2).sum().backward()\n    torch.testing.assert_close(w.grad, ref.grad)\n",
                "import torch\ndef test_grad(device, ref):\n    w = torch.randn(4).to(device).requires_grad_()\n"
                "    (w * 2).sum().backward()\n    torch.testing.assert_close(w.grad, ref.grad)\n",
                unsafe=True, message_contains="not a leaf"),
        Invalid("import torch\ndef f(device):\n    return torch.tensor([1.0, 2.0], requires_grad=True).to(device)\n",
                "import torch\ndef f(device):\n    return torch.tensor([1.0, 2.0]).to(device).requires_grad_()\n",
                unsafe=True, message_contains="not a leaf"),
        Invalid("import torch\nw = torch.randn(4, 4, requires_grad=True, dtype=torch.float64).cuda()\nw.sum().backward()\n"
                "grad = w.grad\n",
                "import torch\nw = torch.randn(4, 4, dtype=torch.float64).cuda().requires_grad_()\nw.sum().backward()\n"
                "grad = w.grad\n", unsafe=True),
        # An attribute whose `.grad` another method reads.
        Invalid("import torch\nclass Fit:\n    def __init__(self):\n"
                "        self.w = torch.zeros(3, requires_grad=True).cuda()\n"
                "    def step(self, lr):\n        self.w.data -= lr * self.w.grad\n",
                "import torch\nclass Fit:\n    def __init__(self):\n"
                "        self.w = torch.zeros(3).cuda().requires_grad_()\n"
                "    def step(self, lr):\n        self.w.data -= lr * self.w.grad\n", unsafe=True),
        # A local handed on in a list (to an optimizer-like loop that reads `p.grad`).
        Invalid("import torch\ndef fit(x, device):\n    w = torch.zeros(3, requires_grad=True).to(device)\n"
                "    params = [w]\n    return train(params, x)\n",
                "import torch\ndef fit(x, device):\n    w = torch.zeros(3).to(device).requires_grad_()\n"
                "    params = [w]\n    return train(params, x)\n", unsafe=True),
        # An in-place method returns the tensor itself: the caller gets the non-leaf.
        Invalid("import torch\ndef make(shape, device):\n    w = torch.empty(shape, requires_grad=True).to(device)\n"
                "    return w.normal_(0, 0.02)\n",
                "import torch\ndef make(shape, device):\n    w = torch.empty(shape).to(device).requires_grad_()\n"
                "    return w.normal_(0, 0.02)\n", unsafe=True),
        # An attribute other code reaches by its name.
        Invalid("import torch\nclass Fit:\n    def __init__(self, device):\n"
                "        self.w = torch.zeros(3, requires_grad=True).to(device)\n"
                "    def params(self):\n        return [getattr(self, 'w')]\n",
                "import torch\nclass Fit:\n    def __init__(self, device):\n"
                "        self.w = torch.zeros(3).to(device).requires_grad_()\n"
                "    def params(self):\n        return [getattr(self, 'w')]\n", unsafe=True),
        # A local the function returns: its caller may read `.grad`.
        Invalid("import torch\ndef make(device):\n    w = torch.ones(2, requires_grad=True).to(device)\n    return w, 2\n",
                "import torch\ndef make(device):\n    w = torch.ones(2).to(device).requires_grad_()\n    return w, 2\n",
                unsafe=True),
        Invalid("import torch\ndef f(flag, device):\n    return torch.ones(2, requires_grad=flag).to(device, non_blocking=True)\n",
                "import torch\ndef f(flag, device):\n    return torch.ones(2).to(device, non_blocking=True).requires_grad_(flag)\n",
                unsafe=True),
    )

    @classmethod
    def may_apply(cls, text: str, settings, gate=None) -> bool:
        return cls.prefilter_matches(text) and _COPY_OF_CALL.search(text)

    @classmethod
    def candidates(cls, facts):
        # The visitor needs a fresh factory with `requires_grad=` as the source of the copy.
        return [call for call in facts.calls_named(cls.call_names)
                if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call)
                and any(keyword.arg == "requires_grad" for keyword in call.func.value.keywords)]

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.context.facts
        start, end = self.position(node)
        found = copy_of(facts, node, start.line)
        if found is None:
            return
        copy, device = found
        fresh = fresh_host_factory(facts, copy.source)
        if device is Device.NOT_CUDA or fresh is None or fresh[1] == "from_numpy" or copy.legacy_type:
            return
        factory = fresh[0]
        requires_grad = keywords_of(factory).get("requires_grad")
        if requires_grad is None or is_literal(requires_grad.value, "False"):
            return
        site = facts.site_at(start, end)
        if site is not None and self._made_leaf_again(site.node):
            return
        if site is not None and not self._grad_may_be_read(
                site.node, in_tests=in_test_code(facts, context_at(facts, start.line))):
            return  # nothing reads the missing `.grad`: the tensor seeds values or carries a gradient on
        message = (f"`torch.{fresh[1]}(..., requires_grad={shown(requires_grad.value)})` is the leaf; the copy "
                   "to the device is not a leaf, so its `.grad` stays None after backward(): call "
                   "`.requires_grad_()` after the copy")
        self.report(node, message, self._fix(node, factory, requires_grad))

    def _grad_may_be_read(self, call: ast.Call, in_tests: bool) -> bool:
        """Whether code may read `.grad` of the copy. Not where it is bound to a local name, or to an attribute
        (`self.mu`), every use of which in the function (for an attribute, in the file) only computes with it: an
        operand, a torch function's argument, a method's receiver, an index; `.grad` excepted. Such a tensor only
        seeds values or carries a gradient on to other leaves. Anything else may read it: a use that hands it on
        (returned, put in a list, passed to a project function or an optimizer, aliased), a binding in a class body,
        at module level or to a `global`. In tests only a `.grad` read counts: there a tensor handed on seeds values."""
        facts = self.context.facts
        statement = facts.parents.get(call)
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return True
        target = statement.targets[0]
        if isinstance(target, ast.Attribute):
            uses = []
            for node in ast.walk(facts.tree):
                if isinstance(node, ast.Constant) and node.value == target.attr \
                        or isinstance(node, ast.Name) and node.id == "vars" \
                        or isinstance(node, ast.Attribute) and node.attr == "__dict__":
                    return True  # reached by its name (`getattr(self, name)`, `vars(self)`): handed on unseen
                if isinstance(node, ast.Attribute) and node.attr == target.attr and isinstance(node.ctx, ast.Load):
                    uses.append(node)
        elif isinstance(target, ast.Name):
            scope = facts.parents.get(statement)
            while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                                ast.Module)):
                scope = facts.parents.get(scope)
            if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or any(
                    isinstance(node, (ast.Global, ast.Nonlocal)) and target.id in node.names for node in ast.walk(scope)):
                return True  # a class attribute, a module's or a global name: code elsewhere may read it
            uses = [node for node in ast.walk(scope) if isinstance(node, ast.Name) and node.id == target.id
                    and isinstance(node.ctx, ast.Load)]
        else:
            return True
        parents = facts.parents
        if any(isinstance(parents.get(use), ast.Attribute) and parents[use].attr == "retain_grad" for use in uses):
            return False  # `w.retain_grad()`: a non-leaf on purpose, whose `.grad` autograd fills
        return not all(self._only_computed_with(use, in_tests) for use in uses)

    def _only_computed_with(self, use: ast.expr, in_tests: bool) -> bool:
        facts = self.context.facts
        parent = facts.parents.get(use)
        if isinstance(parent, ast.Attribute):
            if parent.attr == "grad":
                return False
            method_call = facts.parents.get(parent)
            if isinstance(method_call, ast.Call) and method_call.func is parent and _returns_receiver(parent.attr):
                return self._only_computed_with(method_call, in_tests)  # `w.normal_(0, 0.02)` is `w`
            return True  # another method or attribute of the tensor
        if in_tests:
            return True
        if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript)):
            return True
        if isinstance(parent, ast.keyword):
            parent = facts.parents.get(parent)
        if isinstance(parent, ast.Call) and use is not parent.func:
            called = facts.qualify(dotted_name(parent.func)) or ""
            if parent.args and parent.args[0] is use and (called.endswith("_") or called.startswith("torch.Tensor.")
                                                          and _returns_receiver(called.rpartition(".")[2])):
                return self._only_computed_with(parent, in_tests)  # `torch.nn.init.xavier_uniform_(w)` is `w`
            return called.startswith("torch.") and not called.startswith(_HANDS_ON)
        return False

    def _made_leaf_again(self, call: ast.Call) -> bool:
        parents = self.context.facts.parents
        parent = parents.get(call)
        if isinstance(parent, ast.Attribute) and parent.attr in LEAF_AGAIN:
            return True
        if isinstance(parent, ast.Call) and call in parent.args:
            return (dotted_name(parent.func) or "").rsplit(".", 1)[-1] == "Parameter"
        return False

    def _fix(self, node, factory, requires_grad) -> Fix | None:
        kept = [arg for arg in factory.args if arg is not requires_grad]
        source = factory.with_changes(args=join_args(list(factory.args), kept), lpar=[], rpar=[])
        moved = node.with_changes(func=node.func.with_changes(value=source))
        flag = [] if is_literal(requires_grad.value, "True") else [cst.Arg(requires_grad.value)]
        replacement = cst.Call(func=cst.Attribute(value=moved, attr=cst.Name("requires_grad_")), args=flag)
        edit = self.context.replace_node(node, replacement, self)
        if edit is None:
            return None
        return Fix(edits=(edit,), applicability=Applicability.UNSAFE,
                   message="Make the device tensor the leaf: `.requires_grad_()` after the copy (unsafe: the result "
                           "becomes a leaf and now receives `.grad`)")


def _returns_receiver(method: str) -> bool:
    """A tensor method that returns the tensor itself (in place, `normal_`), or may (`to`, `contiguous`, `float`
    when nothing changes): what it returns is the copy, as much as the name is."""
    return method.endswith("_") or method in _MAY_RETURN_ITSELF


_MAY_RETURN_ITSELF = frozenset({"to", "cuda", "cpu", "type", "type_as", "float", "half", "double", "bfloat16",
                                "contiguous"})
# The torch functions that take tensors to keep or to read their gradients: an argument handed to one may have its
# `.grad` read (an optimizer refuses a non-leaf; `clip_grad_norm_` skips a `.grad` that is None).
_HANDS_ON = ("torch.optim.", "torch.nn.utils.", "torch.nn.Parameter", "torch.nn.parameter.", "torch.nn.ParameterList",
             "torch.nn.ParameterDict", "torch.distributed.")
