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
