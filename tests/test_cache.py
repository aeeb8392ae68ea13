"""The findings cache: an unchanged file is not parsed again; any change is seen."""

import os
from pathlib import Path

from h2dlint.cache import CACHE_DIR_NAME, FindingsCache, build_fingerprint
from h2dlint.engine import Linter, process_file
from h2dlint.rule import all_rules
from h2dlint.runner import run_files
from h2dlint.settings import Settings

BLOCKING = "import torch\ndef f(d):\n    return torch.tensor([1, 2], device=d)\n"


class CountingLinter(Linter):
    def __init__(self, settings):
        rules = all_rules()
        super().__init__([rules[code] for code in settings.enabled_codes(rules)], settings)
        self.linted: list[str] = []

    def lint(self, source):
        self.linted.append(source.path.name)
        return super().lint(source)


def run(tmp_path: Path, settings=Settings(), mode="check"):
    linter = CountingLinter(settings)
    cache = FindingsCache(tmp_path, build_fingerprint(settings, settings.enabled_codes(all_rules())))
    files = sorted(tmp_path.glob("*.py"))
    return run_files(files, linter, mode, jobs=1, cache=cache), linter.linted


def test_unchanged_files_are_not_linted_again(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    (tmp_path / "b.py").write_text("import torch\n")
    first, linted = run(tmp_path)
    assert sorted(linted) == ["a.py", "b.py"]
    second, linted = run(tmp_path)
    assert linted == []
    assert [result.findings for result in second] == [result.findings for result in first]
    assert len(second[0].findings) == 1


def test_a_changed_file_is_linted_again(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    (tmp_path / "b.py").write_text("import torch\n")
    run(tmp_path)
    (tmp_path / "b.py").write_text(BLOCKING.replace("[1, 2]", "[3]"))
    results, linted = run(tmp_path)
    assert linted == ["b.py"]
    assert [len(result.findings) for result in results] == [1, 1]


def test_touched_but_identical_file_is_not_parsed(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    os.utime(tmp_path / "a.py", ns=(1, 1))
    _, linted = run(tmp_path)
    assert linted == []


def test_other_settings_use_another_cache(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    results, linted = run(tmp_path, Settings(ignore=("HDL101",)))
    assert linted == ["a.py"] and results[0].findings == ()


def test_fix_mode_skips_cached_files_with_nothing_to_fix(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    (tmp_path / "clean.py").write_text("import torch\nx = torch.tensor([1])\n")
    run(tmp_path)
    _, linted = run(tmp_path, mode="fix")
    assert "clean.py" not in linted and "a.py" in linted
    assert "pin_memory" in (tmp_path / "a.py").read_text()


def test_fix_mode_takes_the_findings_to_fix_from_the_cache(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    results, linted = run(tmp_path, mode="fix")
    assert linted == ["a.py"]  # once: the fixed text, not the cached original again
    assert results[0].fixes_applied == 1 and results[0].findings == ()
    assert "pin_memory" in (tmp_path / "a.py").read_text()


def test_a_file_changed_after_its_cache_lookup_is_linted_again(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    settings = Settings()
    linter = CountingLinter(settings)
    cache = FindingsCache(tmp_path, build_fingerprint(settings, settings.enabled_codes(all_rules())))
    path = tmp_path / "a.py"
    known = (cache.digest(path), cache.lookup(path))
    path.write_text("import torch\ndef f(d):\n    return torch.tensor([1, 2])\n")
    result = process_file(path, linter, "fix", known)
    assert linter.linted == ["a.py"] and result.fixes_applied == 0 and result.findings == ()


def test_add_noqa_after_a_cached_run_suppresses_the_cached_findings(tmp_path):
    # A finding without a fix: the cached result must not be taken as all there is to do.
    (tmp_path / "a.py").write_text("import torch\ndef f(xs):\n    for x in xs:\n        print(x.cuda().item())\n"
                                   "        total = x.cuda().sum().item()\n")
    run(tmp_path)
    results, linted = run(tmp_path, mode="add-noqa")
    assert linted == [] and results[0].noqa_added == 1
    assert "total = x.cuda().sum().item()  # noqa: HDL201" in (tmp_path / "a.py").read_text()
    results, _ = run(tmp_path)
    assert results[0].findings == ()


def test_cache_folder_is_tagged_and_ignored(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    folder = tmp_path / CACHE_DIR_NAME
    assert (folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (folder / ".gitignore").read_text() == "*\n"


def test_corrupt_cache_is_ignored(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    for entry in (tmp_path / CACHE_DIR_NAME).glob("*.json"):
        entry.write_text("{not json")
    results, linted = run(tmp_path)
    assert linted == ["a.py"] and len(results[0].findings) == 1
