"""The findings cache: an unchanged file is not parsed again; any change is seen."""

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from h2dlint.cache import CACHE_DIR_NAME, STALE_AFTER_SECONDS, FindingsCache, build_fingerprint
from h2dlint.cli import main
from h2dlint.engine import Linter, process_file
from h2dlint.rule import all_rules
from h2dlint.runner import run_files
from h2dlint.settings import Settings

BLOCKING = "import torch\ndef forward(d):\n    return torch.tensor([1, 2], device=d)\n"


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


def test_settings_that_change_no_finding_keep_the_cache(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    for settings in (Settings(output_format="github"), Settings(unsafe_fixes=True), Settings(exclude=("build",)),
                     Settings(force_exclude=True), Settings(respect_gitignore=False)):
        results, linted = run(tmp_path, settings)
        assert linted == [] and len(results[0].findings) == 1, settings
    _, linted = run(tmp_path, Settings(hot_functions=("f",)))  # a setting rules read
    assert linted == ["a.py"]


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
    path.write_text("import torch\ndef forward(d):\n    return torch.tensor([1, 2])\n")
    result = process_file(path, linter, "fix", known)
    assert linter.linted == ["a.py"] and result.fixes_applied == 0 and result.findings == ()


def test_add_noqa_after_a_cached_run_suppresses_the_cached_findings(tmp_path):
    # A finding without a fix: the cached result must not be taken as all there is to do.
    (tmp_path / "a.py").write_text("import torch\ndef forward(xs):\n    for x in xs:\n        print(x.cuda().item())\n"
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


def _cache_files(tmp_path: Path) -> dict[str, Path]:
    return {entry.name: entry for entry in (tmp_path / CACHE_DIR_NAME).iterdir()}


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_saving_deletes_cache_files_unused_for_a_week_and_keeps_the_others(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    (current,) = [name for name in _cache_files(tmp_path) if name.endswith(".json")]
    folder = tmp_path / CACHE_DIR_NAME
    old_version, other_settings = "0" * 32 + ".json", "1" * 32 + ".json"
    for name, age in ((old_version, STALE_AFTER_SECONDS + 60), (other_settings, 3600),
                      ("tmpk1lled_r.tmp", STALE_AFTER_SECONDS + 60)):
        (folder / name).write_text("{}")
        _age(folder / name, age)
    _age(folder / "CACHEDIR.TAG", STALE_AFTER_SECONDS + 60)
    (tmp_path / "a.py").write_text(BLOCKING + "\n")  # something to save
    run(tmp_path)
    assert sorted(_cache_files(tmp_path)) == sorted([".gitignore", "CACHEDIR.TAG", current, other_settings])


def test_loading_a_cache_file_counts_as_using_it(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    (current,) = [path for name, path in _cache_files(tmp_path).items() if name.endswith(".json")]
    _age(current, STALE_AFTER_SECONDS + 60)
    _, linted = run(tmp_path)  # nothing changed: nothing saved, but the file was used
    assert linted == [] and time.time() - current.stat().st_mtime < 60
    run(tmp_path, Settings(select=("HDL1",)))  # another settings' cache is saved, and prunes
    assert current.exists()


def test_saving_drops_the_entries_of_deleted_files_and_keeps_those_not_checked_this_time(tmp_path):
    for name in ("a.py", "deleted.py", "not_checked.py"):
        (tmp_path / name).write_text(BLOCKING)
    run(tmp_path)
    (tmp_path / "deleted.py").unlink()
    (tmp_path / "a.py").write_text(BLOCKING + "\n")
    settings = Settings()
    cache = FindingsCache(tmp_path, build_fingerprint(settings, settings.enabled_codes(all_rules())))
    run_files([tmp_path / "a.py"], CountingLinter(settings), "check", jobs=1, cache=cache)
    entries = json.loads(cache.file.read_text())
    assert sorted(Path(key).name for key in entries) == ["a.py", "not_checked.py"]


def test_clean_deletes_the_cache_folder(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(BLOCKING)
    run(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 0 and result.output == f"Removed {CACHE_DIR_NAME}\n"
    assert not (tmp_path / CACHE_DIR_NAME).exists() and (tmp_path / "a.py").exists()
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 0 and result.output == f"No {CACHE_DIR_NAME} here\n"


def test_clean_does_not_follow_a_symbolic_link(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    project = tmp_path / "project"
    project.mkdir()
    (project / CACHE_DIR_NAME).symlink_to(elsewhere)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 2 and "cannot remove" in result.output
    assert (elsewhere / "keep.txt").read_text() == "mine"


def test_saving_deletes_no_file_it_did_not_write_and_nothing_through_a_symbolic_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("old_report.csv", "f" * 32 + ".json"):
        (elsewhere / name).write_text("mine")
        _age(elsewhere / name, STALE_AFTER_SECONDS + 60)
    project = tmp_path / "project"
    project.mkdir()
    (project / CACHE_DIR_NAME).symlink_to(elsewhere)
    (project / "a.py").write_text(BLOCKING)
    run(project)
    (project / "a.py").write_text(BLOCKING + "\n")
    run(project)
    assert [(elsewhere / name).read_text() for name in ("old_report.csv", "f" * 32 + ".json")] == ["mine", "mine"]

    (project / CACHE_DIR_NAME).unlink()
    (project / CACHE_DIR_NAME).mkdir()
    (project / CACHE_DIR_NAME / "notes.txt").write_text("mine")
    _age(project / CACHE_DIR_NAME / "notes.txt", STALE_AFTER_SECONDS + 60)
    for change in ("\n", "\n\n"):  # two saves: the second in a folder h2dlint has tagged by then
        (project / "a.py").write_text(BLOCKING + change)
        run(project)
    assert (project / CACHE_DIR_NAME / "notes.txt").read_text() == "mine"


def _modules_imported_by_a_run(folder: Path, *arguments: str) -> tuple[str, set[str]]:
    """The output of `h2dlint check .` in `folder`, run in a fresh interpreter, and the modules it imported."""
    import subprocess
    import sys

    driver = ("import sys\nfrom h2dlint.cli import main\ntry:\n    main(sys.argv[1:], standalone_mode=False)\n"
              "except SystemExit:\n    pass\nsys.stdout.flush()\nprint(*sorted(sys.modules), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", driver, "check", ".", *arguments], cwd=folder,
                          capture_output=True, text=True, check=False)
    return done.stdout, set(done.stderr.split())


def test_a_run_whose_findings_all_come_from_the_cache_does_not_import_libcst(tmp_path):
    """Importing LibCST takes about as long as the rest of a warm run: only a run that parses with it imports it."""
    (tmp_path / "step.py").write_text(BLOCKING)
    (tmp_path / "quiet.py").write_text("def forward(x):\n    return x + 1\n")
    first, imported = _modules_imported_by_a_run(tmp_path, "--jobs", "1")
    assert "HDL101" in first and "libcst" in imported
    again, imported = _modules_imported_by_a_run(tmp_path, "--jobs", "1")
    assert again == first
    assert "libcst" not in imported and "h2dlint.rules.hdl101_blocking_tensor_copy" in imported
    # An edit with nothing for LibCST to parse does not import it either; one with a finding does.
    (tmp_path / "quiet.py").write_text("def forward(x):\n    return x + 2\n")
    assert "libcst" not in _modules_imported_by_a_run(tmp_path, "--jobs", "1")[1]
    (tmp_path / "quiet.py").write_text(BLOCKING.replace("def forward", "def step"))
    edited, imported = _modules_imported_by_a_run(tmp_path, "--jobs", "1")
    assert "quiet.py" in edited and "libcst" in imported
