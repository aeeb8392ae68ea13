"""Every rule's own valid and invalid examples, run through the real engine, both parse paths."""

import ast

import pytest

from h2dlint.model import Applicability
from h2dlint.rule import all_rules

from .helpers import apply_fix, lint

RULES = all_rules()
VALID = [(code, index, example) for code, rule in RULES.items() for index, example in enumerate(rule.valid_examples)]
INVALID = [(code, index, example) for code, rule in RULES.items()
           for index, example in enumerate(rule.invalid_examples)]


@pytest.mark.parametrize("full_parse", [False, True], ids=["candidates", "full"])
@pytest.mark.parametrize(("code", "index", "example"), VALID, ids=[f"{c}-valid-{i}" for c, i, _ in VALID])
def test_valid_example_is_not_reported(code, index, example, full_parse):
    assert lint(example.code, code, full_parse=full_parse) == []


@pytest.mark.parametrize("full_parse", [False, True], ids=["candidates", "full"])
@pytest.mark.parametrize(("code", "index", "example"), INVALID, ids=[f"{c}-invalid-{i}" for c, i, _ in INVALID])
def test_invalid_example_is_reported_and_fixed_as_documented(code, index, example, full_parse):
    findings = lint(example.code, code, full_parse=full_parse)
    assert [finding.code for finding in findings] == [code]
    finding = findings[0]
    assert example.message_contains in finding.message
    if example.expected_fix is None:
        assert finding.fix is None
        return
    assert finding.fix is not None
    assert (finding.fix.applicability is Applicability.UNSAFE) == example.unsafe, finding.fix.message
    fixed = apply_fix(example.code, finding)
    assert fixed == example.expected_fix
    ast.parse(fixed)
    assert lint(fixed, code) == [], "the fixed code must not be reported again"


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_docs_have_every_section(code):
    docs = RULES[code].docs()
    for section in ("## What it does", "## Why is this bad?", "## Example", "Use instead:", "## Fix safety"):
        assert section in docs, f"{code} docs lack {section!r}"
    assert RULES[code].invalid_examples and RULES[code].valid_examples


FIXED = [(code, index, example) for code, index, example in INVALID if example.expected_fix is not None]
# Examples that cannot run without CUDA or another package: their pinned branch is left to the GPU check.
NEEDS_MORE_THAN_THE_CPU = ("vllm", "cuda.Stream", "cuda.FloatTensor", "cuda.LongTensor", "cuda.IntTensor")


@pytest.mark.parametrize(("code", "index", "example"), FIXED, ids=[f"{c}-invalid-{i}" for c, i, _ in FIXED])
def test_fix_pinned_branch_raises_nothing_its_label_hides(code, index, example):
    """The documented fix, its pin guards forced true, against the original on stand-in arguments: a pin torch
    refuses (a crash on CUDA) is allowed only in an unsafe fix whose message says what cannot be pinned."""
    pytest.importorskip("torch")
    from h2dlint.verify.examples import replay_example

    replay = replay_example(example.code, example.expected_fix)
    if "pin_memory" in example.expected_fix and not any(word in example.code for word in NEEDS_MORE_THAN_THE_CPU):
        assert replay.runs and replay.pin_requests, "the pinned branch did not run"
    if code in ("HDL101", "HDL102", "HDL104"):
        assert replay.differences == []
    if replay.crashes:
        [finding] = lint(example.code, code)
        assert example.unsafe, replay.crashes
        assert "cannot pin" in finding.fix.message, (finding.fix.message, replay.crashes)


def test_a_fix_that_pins_numpy_data_is_caught_by_the_same_replay():
    pytest.importorskip("torch")
    from h2dlint.verify.examples import replay_example

    original = ("import numpy as np\nimport torch\ndef forward(rows, device):\n"
                "    return torch.tensor(np.stack(rows), device=device)\n")
    crashing = ("import numpy as np\nimport torch\ndef forward(rows, device):\n"
                "    return torch.tensor(np.stack(rows), pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)\n")
    replay = replay_example(original, crashing)
    assert replay.crashes and all(crash.endswith("Can't pin tensor constructed from numpy") for crash in replay.crashes)
    assert any(crash.startswith("forward(list, device): `torch.tensor` with pin_memory would raise on CUDA")
               for crash in replay.crashes)
    [finding] = lint(original, "HDL101")
    assert finding.fix is None and "is a numpy array" in finding.message, "h2dlint itself offers no such fix"
