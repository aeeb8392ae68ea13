"""Property-based tests: on generated programs the engine never raises, every fix parses,
fixing twice equals fixing once, and the fast path agrees with the full parse.

The default suite runs a few dozen examples per test; set H2DLINT_FUZZ_EXAMPLES
for a longer run, e.g. `H2DLINT_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py`.
"""

import ast
import os
import re
from pathlib import Path

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from h2dlint.source import decode_source

from .helpers import linter_for

EXAMPLES = int(os.environ.get("H2DLINT_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="H2DLINT_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

FAST = linter_for(unsafe_fixes=True)
FULL = linter_for(unsafe_fixes=True, full_parse=True)


def check_properties(code: str) -> None:
    source = decode_source(code.encode("utf-8"), Path("fuzzed.py"))
    findings = FAST.lint(source)
    assert _comparable(findings) == _comparable(FULL.lint(source))
    once, _, _ = FAST.fix(source, findings)  # Linter.fix parses every round's result itself
    ast.parse(once)
    again = decode_source(once.encode("utf-8"), Path("fuzzed.py"))
    twice, _, applied = FAST.fix(again, FAST.lint(again))
    assert applied == () and twice == once


def _comparable(findings):
    return [(finding.start, finding.end, finding.code, finding.message, finding.fix) for finding in findings]


# ----- generated programs, with a blocking copy appended so the rules look at them ----------------

BLOCKING_TAIL = "\nimport torch\ndef _tail(device):\n    return torch.tensor([1, 2], device=device)\n"


@FUZZ
@given(hypothesmith.from_grammar())
def test_programs_from_the_grammar(program):
    check_properties(program)
    check_properties(program + BLOCKING_TAIL)


# ----- real-looking snippets with the blocking pattern injected ------------------------------------

IMPORTS = {
    "torch": "import torch",
    "th": "import torch as th",
    "tensor": "import torch\nfrom torch import tensor",
    "as_tensor": "from torch import as_tensor",
    "at": "from torch import as_tensor as at",
}
DATA = ["[1, 2, 3]", "[i * 2 for i in range(n)]", "values", "values_cpu", "lengths.tolist()", "np.array(values)",
        "{torch}.zeros(3)", "(1.0, 2.0)", "-1", "3.5", "batch.seq_lens_cpu", "[[0, 1], [2, 3]]", "rows"]
DEVICES = ["'cuda'", '"cuda:1"', "0", "device", "x.device", "{torch}.device('cuda', 0)", "'cpu'", "self.device",
           "torch.device(dev)", "get_device()", "f'cuda:{{rank}}'", "None if cpu else 'cuda'"]
KEYWORDS = ["dtype={torch}.int64", "dtype={torch}.float32", "requires_grad=True", "requires_grad=False",
            "requires_grad=flag"]


def _name(keyword: str) -> str:
    return keyword.split("=")[0]


@st.composite
def blocking_call(draw, torch: str, callee: str) -> str:
    separator = draw(st.sampled_from([", ", ",", ",\n    ", " ,  ", ",  # note\n        "]))
    data = draw(st.sampled_from(DATA)).format(torch=torch)
    device = draw(st.sampled_from(DEVICES)).format(torch=torch)
    equal = draw(st.sampled_from(["=", " = "]))
    keywords = [keyword.format(torch=torch) for keyword in draw(st.lists(st.sampled_from(KEYWORDS), unique_by=_name,
                                                                          max_size=2))]
    keywords.insert(draw(st.integers(0, len(keywords))), f"device{equal}{device}")
    arguments = separator.join([data, *keywords])
    opening = draw(st.sampled_from(["(", "(\n    ", "(  # why\n    "]))
    closing = draw(st.sampled_from([")", ",)", "\n)", ",\n)", "  # end\n)"]))
    call = f"{callee}{opening}{arguments}{closing}"
    return draw(st.sampled_from(["{}", "({})", "(\n    {}\n)", "{}.item()", "{}.sum()", "int({})", "{}[0]"])).format(call)


@st.composite
def snippet(draw) -> str:
    alias = draw(st.sampled_from(sorted(IMPORTS)))
    torch = "th" if alias == "th" else "torch"
    callee = {"torch": "torch.tensor", "th": draw(st.sampled_from(["th.tensor", "th.as_tensor"])),
              "tensor": "tensor", "as_tensor": "as_tensor", "at": "at"}[alias]
    calls = draw(st.lists(blocking_call(torch, callee), min_size=1, max_size=3))
    header = IMPORTS[alias] + draw(st.sampled_from(["", "\nimport numpy as np", "\nstream = torch.cuda.Stream()"]))
    body = []
    for number, call in enumerate(calls):
        indent = "        "
        shape = draw(st.sampled_from(["assign", "loop", "return", "comprehension", "lambda", "fstring",
                                      "nested", "default", "with", "branch"]))
        if shape in ("fstring", "nested") and ("#" in call or "\n" in call or '"' in call):
            shape = "assign"  # Python 3.11 f-strings hold no comments, line breaks or their own quotes
        if shape == "loop":
            body.append(f"    for rows in batches:\n{indent}t{number} = {call}")
        elif shape == "return":
            body.append(f"    if flag:\n{indent}return {call}")
        elif shape == "comprehension":
            body.append(f"    t{number} = [{call} for values in groups]")
        elif shape == "lambda":
            body.append(f"    make{number} = lambda values: {call}")
        elif shape == "fstring":
            body.append(f"    text{number} = f\"{{{call}!r}}\"")
        elif shape == "nested":
            inner = re.sub(r"\bvalues\b", lambda _: call, call, count=1)  # noqa: B023 (used at once)
            body.append(f"    t{number} = {inner}")
        elif shape == "default":
            body.append(f"    def inner{number}(x={call}):\n{indent}return x")
        elif shape == "with":
            body.append(f"    with {torch}.no_grad():\n{indent}t{number} = {call}")
        elif shape == "branch":
            body.append(f"    if flag:\n{indent}values = [1]\n    else:\n{indent}values = other\n"
                        f"    t{number} = {call}")
        else:
            body.append(f"    t{number} = {call}")
        body[-1] += draw(st.sampled_from(["", "", "  # noqa", "  # noqa: HDL101", "  # comment"]))
    function = ("def step(values, values_cpu, lengths, batch, rows, n, device, x, dev, flag, rank, cpu, "
                "batches, groups, other):\n" + "\n".join(body) + "\n    return None\n")
    wrapper = draw(st.sampled_from(["function", "class", "module"]))
    if wrapper == "class":
        method = function.replace("def step(", "def step(self, ").replace("\n", "\n    ")
        return f"{header}\n\n\nclass Runner:\n    device = 'cuda'\n\n    {method.rstrip()}\n"
    if wrapper == "module":
        return f"{header}\nvalues = [1, 2]\ndevice = 'cuda'\nfirst = {calls[0]}\n{function}"
    return f"{header}\n\n\n{function}"


@FUZZ
@given(snippet())
def test_snippets_with_blocking_copies(code):
    compile(code, "snippet.py", "exec")
    check_properties(code)


@FUZZ
@given(snippet(), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_line_endings_and_bom_survive_a_fix(code, newline, bom):
    compile(code, "snippet.py", "exec")
    raw = (b"\xef\xbb\xbf" if bom else b"") + code.replace("\n", newline).encode("utf-8")
    source = decode_source(raw, Path("fuzzed.py"))
    fixed, _, applied = FAST.fix(source, FAST.lint(source))
    written = source.encode(fixed)
    assert written.startswith(b"\xef\xbb\xbf") == bom
    other_endings = written.replace(newline.encode(), b"")
    assert b"\n" not in other_endings and b"\r" not in other_endings
    compile(written, "fuzzed.py", "exec")
