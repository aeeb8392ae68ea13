"""The fast path (prefilters, candidate filters, candidate snippets) finds exactly what the full
path (whole-module LibCST visit of every file) finds, on real code: a sample of the installed
torch package, and files where the fast path reports something, with every rule selected."""

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


def linter(full_parse: bool) -> Linter:
    settings = Settings(select=("ALL",), full_parse=full_parse)
    rules = all_rules()
    return Linter([rules[code] for code in settings.enabled_codes(rules)], settings)


def findings(path: Path, linter: Linter):
    result = process_file(path, linter, "check")
    assert result.error is None, result.error
    return [finding for finding in result.findings if finding.code != SYNTAX_ERROR]


def test_fast_and_full_paths_agree_on_torch():
    files = torch_files()
    fast = linter(False)
    reported = [path for path in files if findings(path, fast)]
    sample = sorted(path for path in set(files[:: max(1, len(files) // SAMPLE)]) | set(reported[:SAMPLE])
                    if path.stat().st_size < 100_000)  # LibCST on torch's largest files takes minutes
    full = linter(True)
    for path in sample:
        assert findings(path, fast) == findings(path, full), path
    assert reported, "torch itself has blocking copies; finding none means the fast path missed them"
