"""The fast path (prefilters, anchored walk, candidate snippets) finds exactly what the full
path (whole-module LibCST visit of every file) finds, on real code: a sample of the installed
torch package, and files where the fast path reports something; with every rule selected, and with
anchored rules only (the selection that makes the fast path skip statements)."""

import importlib.util
from pathlib import Path

import pytest

from h2dlint.discovery import find_python_files
from h2dlint.engine import Linter, process_file
from h2dlint.model import SYNTAX_ERROR
from h2dlint.rule import all_rules
from h2dlint.settings import Settings

SAMPLE = 12


def torch_files() -> list[Path]:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    return find_python_files([Path(next(iter(spec.submodule_search_locations)))])


# Every rule, and a selection of anchored rules only, for which the fast path's `ast` walk skips the statements
# without a candidate line (with every rule selected, some rule always needs the whole walk).
SELECTIONS = {"all": ("ALL",), "anchored": ("HDL1", "HDL201", "HDL301", "HDL303", "HDL304", "HDL305")}


def linter(full_parse: bool, select: tuple[str, ...]) -> Linter:
    settings = Settings(select=select, full_parse=full_parse)
    rules = all_rules()
    return Linter([rules[code] for code in settings.enabled_codes(rules)], settings)


def findings(path: Path, linter: Linter):
    result = process_file(path, linter, "check")
    assert result.error is None, result.error
    return [finding for finding in result.findings if finding.code != SYNTAX_ERROR]


def test_the_anchored_selection_takes_the_anchored_walk():
    assert all(rule.anchor() is not None for rule in linter(False, SELECTIONS["anchored"]).rules)


@pytest.mark.parametrize("selection", SELECTIONS)
def test_fast_and_full_paths_agree_on_torch(selection):
    files = torch_files()
    fast = linter(False, SELECTIONS[selection])
    reported = [path for path in files if findings(path, fast)]
    sample = sorted(path for path in set(files[:: max(1, len(files) // SAMPLE)]) | set(reported[:SAMPLE])
                    if path.stat().st_size < 100_000)  # LibCST on torch's largest files takes minutes
    full = linter(True, SELECTIONS[selection])
    for path in sample:
        assert findings(path, fast) == findings(path, full), path
    assert reported, "torch itself has blocking copies; finding none means the fast path missed them"
