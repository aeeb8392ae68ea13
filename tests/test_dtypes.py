"""`dtypes.integer_tensor`: what tells a tensor index by position from a boolean mask."""

import ast

import pytest

from h2dlint.dtypes import integer_tensor
from h2dlint.project import summarize

SOURCE = """
import torch as th
ids = th.arange(4)
mixed = th.arange(4)
mixed = th.ones(4)
"""


class Reader:
    """The module-level assignments of SOURCE as bindings, `th` as torch."""

    def __init__(self, source: str = SOURCE, parameters: dict[str, bool] | None = None) -> None:
        self.bound: dict[str, list] = {}
        for statement in ast.parse(source).body:
            if isinstance(statement, ast.Assign):
                self.bound.setdefault(statement.targets[0].id, []).append((statement.value, None))
        for name, passed in (parameters or {}).items():
            self.bound[name] = [(passed, None)]

    def qualify(self, dotted):
        head, _, rest = (dotted or "").partition(".")
        return ("torch" + ("." + rest if rest else "")) if head == "th" else None

    def bindings(self, name, at):
        return self.bound.get(name)

    def is_int(self, expr, at):
        return isinstance(expr, ast.Constant) and type(expr.value) is int

    def is_device(self, expr, at):
        return isinstance(expr, ast.Constant) and isinstance(expr.value, str)


@pytest.mark.parametrize(("expression", "holds_integers"), [
    ("th.arange(n)", True),
    ("th.zeros(n, dtype=th.int64)", True),
    ("upload(rows, dtype=th.int32, device=d)", True),  # any call given an integer dtype
    ("th.zeros(n, dtype=th.bool)", False),
    ("th.zeros(n, dtype=th.uint8)", False),  # byte tensors index as masks
    ("scores.argsort(dim=-1)[:, :k]", True),
    ("scores.argsort(dim=-1)[:, ids]", True),
    ("x.long().cuda()", True),
    ("x.to(th.int64)", True),
    ("ids.to(th.float32)", False),
    ("ids.to('cuda', non_blocking=True)", True),
    ("ids.to(x.device)", True),
    ("ids.to(other)", False),  # takes `other`'s dtype when it is a tensor
    ("ids.to(x.dtype)", False),
    ("ids.view(th.uint8)", False),
    ("ids.view(-1)[:3]", True),
    ("ids[0]", False),  # may be 0-d: read back as an int, no `index_put_`
    ("x.argmax(dim=0)", False),
    ("ids.view(-1) + 1", True),
    ("ids * scale", False),  # `scale` may be a float
    ("th.cat([ids, ids + offset.long()])", True),
    ("th.cat([ids, x])", False),
    ("ids > 0", False),
    ("mixed", False),
    ("x", False),
    ("th.tensor(data)", False),  # no dtype: its data decide, which the code need not show
])
def test_integer_tensor(expression, holds_integers):
    assert integer_tensor(ast.parse(expression, mode="eval").body, Reader()) is holds_integers


def test_a_parameter_counts_as_its_callers_found():
    expr = ast.parse("rows[:n]", mode="eval").body
    assert integer_tensor(expr, Reader(parameters={"rows": True}))
    assert not integer_tensor(expr, Reader(parameters={"rows": False}))


def test_a_name_rebound_from_itself_counts_its_other_bindings():
    reader = Reader("import torch as th\nids = th.tensor(data, dtype=th.long)\nids = ids.to('cuda')\n"
                    "ids = ids + 1\nmask = x > 0\nmask = mask.long()\nloop = loop + 1\n")
    assert integer_tensor(ast.parse("ids", mode="eval").body, reader)
    assert not integer_tensor(ast.parse("mask", mode="eval").body, reader)
    assert not integer_tensor(ast.parse("loop", mode="eval").body, reader)


def test_a_summary_reads_the_devices_and_dtypes_of_a_callers_arguments():
    code = ("import torch\ndef clear(rows, t):\n    t[rows] = 0\n"
            "def step(t, data, x):\n    dev = 'cuda'\n    ids = torch.tensor(data, dtype=torch.long)\n"
            "    ids = ids.to(dev, non_blocking=True)\n    clear(ids, t)\n"
            "    a = b\n    b = a\n    clear(ids.to(a), t)\n    clear(x > 0, t)\n")
    step = summarize(ast.parse(code), "m")["functions"]["step"]
    clears = [index for index, reference in enumerate(step["calls"]) if reference == "n:clear"]
    passed = [ast.literal_eval(step["arguments"][index])[0][0] if index in step["arguments"] else []
              for index in clears]
    assert passed == [["i"], [], ["n"]]  # integers; `.to(a)` of a name bound in a cycle; a mask, no integers
