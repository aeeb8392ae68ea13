"""Ruff's conventions where users reach for them: rule names, -q/-s, empty trees, input problems as codes,
opt-in rules and prefixes, settable settings, --changed-since's repository, error style and help width."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from h2dlint.cli import main
from h2dlint.rule import all_rules
from h2dlint.settings import Settings

from .helpers import commit_all, git

BLOCKING = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"
BROKEN = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\ndef f(:\n    pass\n"
ROOT = Path(__file__).resolve().parent.parent


def run(*args, **kwargs):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False, **kwargs)


def test_rule_by_name_as_well_as_code():
    by_name = run("rule", "blocking-tensor-copy")
    assert by_name.exit_code == 0
    assert by_name.output == run("rule", "HDL101").output
    assert by_name.output.startswith("# blocking-tensor-copy (HDL101)")
    assert run("rule", "no-such-rule").exit_code == 2


def test_input_problems_are_rules_you_can_look_up_ignore_and_select(tmp_path):
    assert run("rule", "HDL001").output.startswith("# syntax-error (HDL001)")
    assert run("rule", "unreadable-file").output.startswith("# unreadable-file (HDL002)")
    assert "HDL001  syntax-error" in run("rule", "--all").output
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "binary.py").write_bytes(b"x = '\xff'\n")
    reported = run(tmp_path, "--output-format", "concise")
    assert reported.exit_code == 1 and "HDL001" in reported.output and "HDL002" in reported.output
    # `select` of other codes does not hide a file h2dlint could not check; `ignore` does
    assert "HDL001" in run(tmp_path, "--select", "HDL101", "--output-format", "concise").output
    ignored = run(tmp_path, "--ignore", "HDL001,HDL002", "--output-format", "concise")
    assert ignored.exit_code == 0 and "All checks passed!" in ignored.output
    assert run(tmp_path, "--select", "HDL001", "--output-format", "concise").exit_code == 1
    (tmp_path / "pyproject.toml").write_text('[tool.h2dlint]\nper-file-ignores = { "broken.py" = ["HDL001"] }\n')
    per_file = run(tmp_path, "--output-format", "concise")
    assert "HDL001" not in per_file.output and "HDL002" in per_file.output


def test_a_prefix_does_not_turn_on_opt_in_rules():
    rules = all_rules()
    opt_in = {code for code, rule in rules.items() if not rule.default_enabled}
    assert "HDL108" in opt_in and "HDL003" in opt_in
    assert not set(Settings(select=("HDL1",)).enabled_codes(rules)) & opt_in
    assert not set(Settings(extend_select=("HDL",)).enabled_codes(rules)) & opt_in
    assert "HDL108" in Settings(select=("HDL1", "HDL108")).enabled_codes(rules)
    assert "HDL108" in Settings(extend_select=("HDL108",)).enabled_codes(rules)
    assert set(Settings(select=("ALL",)).enabled_codes(rules)) == set(rules)


def test_quiet_prints_findings_only_and_silent_nothing(tmp_path):
    (tmp_path / "a.py").write_text(BLOCKING)
    normal = run(tmp_path / "a.py", "--output-format", "concise")
    assert "Found 1 error." in normal.output
    quiet = run(tmp_path / "a.py", "--output-format", "concise", "-q")
    assert quiet.exit_code == 1
    assert quiet.output.splitlines() == [line for line in normal.output.splitlines() if "HDL" in line]
    silent = run(tmp_path / "a.py", "-s")
    assert silent.exit_code == 1 and silent.output == ""
    assert run(tmp_path / "a.py", "-s", "--diff").output == ""
    assert run(tmp_path / "a.py", "-s", "--fix").output == "" and "pin_memory" in (tmp_path / "a.py").read_text()


def test_no_python_files_is_a_warning(tmp_path):
    (tmp_path / "notes.txt").write_text("torch.tensor\n")
    result = run(tmp_path)
    assert result.exit_code == 0
    assert "warning: No Python files found under the given path(s)" in result.output
    assert "No Python files found" not in run(tmp_path, "-q").output


def test_settings_show_settings_prints_can_be_set(tmp_path):
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    (tmp_path / "ignored.py").write_text(BLOCKING)
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "named.py").write_text(BLOCKING)
    assert "ignored.py" not in run(tmp_path, "--output-format", "concise").output  # .gitignore respected
    (tmp_path / "pyproject.toml").write_text(
        '[tool.h2dlint]\nrespect-gitignore = false\nforce-exclude = true\nexclude = ["generated"]\n')
    settings = run("show-settings", tmp_path).output
    assert "respect-gitignore: False" in settings and "force-exclude: True" in settings
    assert "ignored.py" in run(tmp_path, "--output-format", "concise").output
    # force-exclude from the file: a file named on the command line is excluded too (as pre-commit names them)
    assert run(tmp_path / "generated" / "named.py", "--output-format", "concise").exit_code == 0
    (tmp_path / "pyproject.toml").write_text("[tool.h2dlint]\nrespect-gitignore = 1\n")
    bad = run(tmp_path)
    assert bad.exit_code == 2 and "`respect-gitignore` must be true or false" in bad.output


@pytest.fixture
def repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("import torch\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "a.py").write_text("import torch\n" + BLOCKING.split("\n", 1)[1])
    commit_all(repo, "feature")
    return repo


def test_changed_since_uses_the_repository_of_the_checked_paths(repository, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "other")  # the current folder is another repository, with no `main`
    monkeypatch.chdir(elsewhere)
    result = run(repository, "--changed-since", "main", "--output-format", "concise")
    assert result.exit_code == 1, result.output
    assert f"{repository / 'a.py'}:3:9: HDL101" in result.output


def test_changed_since_in_a_shallow_clone_says_so(repository, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "feature", repository.as_uri(), str(clone)],
                   check=True, capture_output=True)
    git(clone, "fetch", "-q", "--depth", "1", "origin", "main:main")  # the base's tip, not the history between
    result = run(clone, "--changed-since", "main")
    assert result.exit_code == 2
    assert "shallow clone: fetch more history (fetch-depth: 0)" in result.output


def test_click_errors_look_like_h2dlints():
    result = subprocess.run([sys.executable, "-m", "h2dlint", "--no-such-option"], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: no such option '--no-such-option'")
    assert lines[-1].startswith("For more information, try '") and lines[-1].endswith("h2dlint check --help'.")
    ours = subprocess.run([sys.executable, "-m", "h2dlint", "--select", "XYZ9"], capture_output=True, text=True,
                          cwd=ROOT)
    assert ours.returncode == 2 and ours.stderr.startswith("error: unknown rule selector 'XYZ9'")


@pytest.mark.parametrize("command", [(), ("check",), ("rule",), ("show-settings",), ("clean",), ("verify",)])
def test_help_fits_80_columns_and_is_not_cut(command):
    result = subprocess.run([sys.executable, "-m", "h2dlint", *command, "--help"], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    described = [line for line in result.stdout.splitlines() if not line.startswith("Usage:")]
    assert not [line for line in described if line.endswith("...") or line.endswith("(e.g.")], result.stdout
