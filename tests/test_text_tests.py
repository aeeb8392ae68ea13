"""The text tests that decide which files are parsed answer exactly what their plain definitions answer.

They are written for speed (one read of a text per name, searches from a literal, loops instead of regexes that
start with a frequent character); each is compared here with the plain definition it replaces, on generated
texts built from the pieces where the two could part.
"""

import ast
import importlib.util
import itertools
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h2dlint.discovery import find_python_files
from h2dlint.facts import FileFacts, word_gate
from h2dlint.gaps import TokensApart
from h2dlint.hotness import is_hot_function
from h2dlint.rule import Rule, _TextTest, all_rules
from h2dlint.settings import Settings
from h2dlint.source import LineIndex, SourceError, read_source

REPO = Path(__file__).resolve().parents[1]

SETTINGS = settings(max_examples=1000, deadline=None, derandomize=True)


def texts(pieces: list[str]):
    return st.lists(st.sampled_from(pieces), max_size=12).map("".join)


def spelled_apart_by_definition(parts: tuple[str, ...], text: str) -> bool:
    """A part as written, or a named part (`.item(`, `value=`) with blanks, line continuations or whole comment
    lines before its `(` / `=`, or its name imported under another name."""
    if any(part in text for part in parts):
        return True
    names = {part.strip(".(=") for part in parts if part.strip(".(=").isidentifier() and part != part.strip(".(=")}
    gap = r"(?:[\s\\)]|#[^\r\n]*[\r\n])"  # a `)` too: `(x.item)()`
    return any(re.search(re.escape(name) + rf"(?:{gap}*[(=]|{gap}+as\b)", text) for name in names)


PARTS = (".item(", "cpu(", ".cpu(", "value=", "alpha", "]", "] *")
PART_PIECES = ["item", ".item", "(", " ", "\\\n", "cpu", ".", "value", "=", "alpha", "]", " *", "as", "x", "\n",
               "#", " c", "\r", ")"]


@SETTINGS
@given(texts(PART_PIECES))
def test_a_prefilter_matches_what_its_parts_define(text):
    assert _TextTest(PARTS).matches(text) == spelled_apart_by_definition(PARTS, text)


def test_every_catalogue_prefilter_keeps_its_parts_in_order_and_reads_each_name_once():
    for rule in all_rules().values():
        if isinstance(rule.prefilter, tuple):
            test = _TextTest.of(rule.prefilter)
            assert [part for part, _ in test.parts] + test.tokens_apart == \
                [part for part in rule.prefilter if isinstance(part, str)] + \
                [part for part in rule.prefilter if isinstance(part, TokensApart)], rule.code
            assert all(name in part for part, name in test.parts if name is not None), rule.code


# Every TokensApart of h2dlint and its rules: a spelling of each of its tokens, and near misses.
TOKENS_APART_PIECES = {
    "h2dlint.values.ELEMENT_WRITE": (["]", "="], [")", "=="]),
    "h2dlint.rules.hdl501_sync_under_graph_capture._GRAPH_CALLED_OR_RENAMED": (["graph", "("], ["as", "graphs"]),
    "h2dlint.syncs.LIST_REPETITION[0]": (["]", "*"], [")", "**"]),
    "h2dlint.syncs.LIST_REPETITION[1]": (["*", "["], ["(", "**"]),
    "h2dlint.rules.hdl102_blocking_host_tensor_copy.BlockingHostTensorCopy.prefilter": ([".", "cuda", "("], ["to", "tox"]),
    "h2dlint.rules.hdl404_copy_makes_non_leaf._COPY_OF_CALL": ([")", ".", "to"], ["cuda", "tox"]),
    "h2dlint.rules.hdl404_copy_makes_non_leaf.CopyMakesNonLeaf.prefilter": (["requires_grad", "="], ["=="]),
}
BETWEEN_TOKENS = [" ", "\\\n", "\n", "\r", "#", " c", "x"]
# What may stand between two tokens, and what may come before the first: a comment block that an attempt from
# a first token in it reads to its end, and an attempt that fails just before the real first token.
GAPS = ["", " ", " \\\n ", "  # c\n ", "#\r", "\n  # a\n\n  # b\n  "]
PREFIXES = ["", "x = 1\n", "# {first}\n# {first}\n", "{first}  # c\n", "{first}{first}"]

def _tokens_apart_in_modules() -> list[TokensApart]:
    """Every TokensApart in h2dlint's modules and the rule catalogue (a module's own, imported ones, rules' prefilters)."""
    all_rules()
    found = {}
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("h2dlint"):
            for value in vars(module).values():
                items = value if isinstance(value, tuple) else \
                    [value.__dict__.get("prefilter")] if isinstance(value, type) and issubclass(value, Rule) else [value]
                found.update((id(item), item) for item in items if isinstance(item, TokensApart))
    return list(found.values())


def _named(where: str) -> TokensApart:
    """`module.NAME`, `module.NAME[index]` or `module.Rule.prefilter`, from the keys of TOKENS_APART_PIECES."""
    module_name, _, name = where.removesuffix(".prefilter").rpartition(".")
    if module_name not in sys.modules:  # the rule's class name was split off
        module_name, _, rule = module_name.rpartition(".")
        return getattr(sys.modules[module_name], rule).prefilter
    if name.endswith("]"):
        name, index = name[:-1].split("[")
        return getattr(sys.modules[module_name], name)[int(index)]
    value = getattr(sys.modules[module_name], name)
    return value.prefilter if isinstance(value, type) else value


def test_every_tokens_apart_is_compared_with_its_definition():
    assert {id(tokens) for tokens in _tokens_apart_in_modules()} == {id(_named(where)) for where in TOKENS_APART_PIECES}


@pytest.mark.parametrize("where", sorted(TOKENS_APART_PIECES))
def test_tokens_apart_are_found_where_their_definition_finds_them(where):
    tokens = _named(where)
    blank = rf"[\s\\{re.escape(tokens.gap)}]"
    definition = re.compile(f"(?:{blank}|#[^\r\n]*[\r\n])*".join(f"(?:{token})" for token in tokens.tokens))

    spellings, near_misses = TOKENS_APART_PIECES[where]

    @SETTINGS
    @given(texts(spellings + near_misses + BETWEEN_TOKENS))
    def found_where_defined(text):
        assert tokens.search(text) == bool(definition.search(text))
        assert set(tokens.spans(text)) >= {match.span() for match in definition.finditer(text)
                                           if "#" not in match.group()}

    found_where_defined()
    # Every way of spelling the tokens apart, after each prefix: found, and the span ends where the tokens do.
    for gaps in itertools.product(GAPS, repeat=len(spellings) - 1):
        written = spellings[0] + "".join(gap + spelling for gap, spelling in zip(gaps, spellings[1:], strict=True))
        for prefix in PREFIXES:
            text = prefix.format(first=spellings[0]) + written + "\n"
            assert (len(text) - 1 - len(written), len(text) - 1) in set(tokens.spans(text)), repr(text)


LEGACY_PIECES = ["Float", "Long", "BFloat16", "Tensor", "Bool", "x", " ", "cuda", "torch."]


@SETTINGS
@given(texts(LEGACY_PIECES))
def test_hdl105_is_asked_where_a_legacy_type_is_named(text):
    rule = all_rules()["HDL105"]
    by_definition = "cuda" in text and any(name in text for name in rule.prefilter)
    assert rule.may_apply(text, None) == by_definition


def _real_code() -> list[tuple[str, str]]:
    """(name, text) of real code: every 15th module of the installed torch, the fixtures, and the rules' examples."""
    spec = importlib.util.find_spec("torch")
    files = []
    if spec is not None and spec.submodule_search_locations:
        files = find_python_files([Path(next(iter(spec.submodule_search_locations)))])[::15]
    files += find_python_files([REPO / "fixtures"])
    texts = []
    for path in files:
        try:
            texts.append((str(path), read_source(path).text))
        except SourceError:
            continue
    for rule in all_rules().values():
        texts += [(f"{rule.code} example", example.code)
                  for example in (*rule.valid_examples, *rule.invalid_examples)]
    return texts


def test_a_text_test_that_only_spares_parsing_rules_out_no_candidate():
    # Such a rule is not text-tested on a file parsed for another rule: its candidate search must then find
    # nothing where its text test would have said no (else the skipped test was sparing analysis too).
    settings = Settings(select=("ALL",))
    sparing = [rule for rule in all_rules().values() if rule.text_test_spares_only_parsing]
    assert {rule.code for rule in sparing} >= {"HDL101", "HDL102", "HDL301", "HDL401"}
    refused = 0
    for name, text in _real_code():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for rule in sparing:
            if rule.may_apply(text, settings):
                continue
            refused += 1
            facts = FileFacts(tree, LineIndex(text))
            facts.active_codes = frozenset({rule.code})
            assert not list(rule.candidates(facts)), f"{rule.code} on {name}"
    assert refused > 1000


def test_the_word_gate_admits_every_file_whose_tree_holds_gpu_evidence_or_a_hot_name():
    # Without the project model's summary, the engine gates files on words: a file the tree would open must pass.
    settings = Settings()
    opened = 0
    for name, text in _real_code():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        evidence = FileFacts(tree, LineIndex(text)).evidence
        gate = word_gate(text, settings)
        assert gate.gpu or not evidence.gpu, name
        assert gate.hot_names or not any(is_hot_function(defined) for defined in evidence.defined), name
        opened += evidence.gpu
    assert opened > 50


def test_the_word_gate_admits_a_training_step_named_in_capitals():
    # `named_training_step` reads lower-cased words: the gate's word test must not be case-sensitive.
    text = "def Train_Batch(x):\n    return x\n"
    assert is_hot_function("Train_Batch") and word_gate(text, Settings()).hot_names
