"""Other ways to run h2dlint: source on stdin, the flake8 plugin, and the progress bar of long runs."""

import io
import os
import subprocess
import sys

from rich.console import Console

from h2dlint.engine import Linter
from h2dlint.flake8 import Plugin
from h2dlint.progress import PROGRESS_MIN_FILES, progress_bar, wants_progress
from h2dlint.rule import all_rules
from h2dlint.settings import Settings
from h2dlint.stdin import process_stdin

BLOCKING = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"
FIXED = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\n"
UNSAFE = "import torch\ndef forward(data, device):\n    return torch.tensor(data, device=device)\n"


def h2dlint(*args, stdin="", cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "h2dlint", *map(str, args)], input=stdin.encode(),
                          capture_output=True, cwd=cwd, env=env)


def test_stdin_check_reports_under_the_given_name(tmp_path):
    result = h2dlint("check", "-", "--stdin-filename", "pkg/model.py", "--output-format", "concise",
                     stdin=BLOCKING, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.decode().startswith("pkg/model.py:3:9: HDL101")


def test_stdin_fix_prints_only_the_fixed_source(tmp_path):
    result = h2dlint("-", "--stdin-filename", "model.py", "--fix", stdin=BLOCKING, cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.decode() == FIXED
    result = h2dlint("-", "--stdin-filename", "model.py", "--fix", stdin=UNSAFE + BLOCKING.split("\n", 1)[1],
                     cwd=tmp_path)
    assert result.returncode == 1  # the unsafe fix was not applied, so a finding remains
    assert result.stdout.decode() == UNSAFE + FIXED.split("\n", 1)[1]
    assert "model.py:3:12: HDL101" in result.stderr.decode()
    assert not list(tmp_path.iterdir())  # nothing written


def test_stdin_uses_the_configuration_of_the_given_name(tmp_path):
    (tmp_path / "h2dlint.toml").write_text('per-file-ignores = { "generated/*" = ["HDL101"] }\n')
    assert h2dlint("-", "--stdin-filename", "generated/x.py", stdin=BLOCKING, cwd=tmp_path).returncode == 0
    assert h2dlint("-", "--stdin-filename", "src/x.py", stdin=BLOCKING, cwd=tmp_path).returncode == 1


def test_flake8_plugin_class():
    lines = BLOCKING.splitlines(keepends=True) + ["y = torch.tensor([3, 4], device='cuda')  # noqa: HDL101\n"]
    [(line, column, message, kind)] = list(Plugin(None, "example.py", lines).run())
    assert (line, column, kind) == (3, 8, Plugin)
    assert message.startswith("HDL101 `torch.tensor` copies host data")


def test_real_flake8_runs_the_plugin(tmp_path):
    (tmp_path / "model.py").write_text(BLOCKING)
    result = subprocess.run([sys.executable, "-m", "flake8", "--select", "HDL", "model.py"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("./model.py:3:9: HDL101 ") or result.stdout.startswith("model.py:3:9: HDL101 ")


def test_progress_bar_only_for_a_person_at_a_terminal():
    terminal = Console(file=io.StringIO(), force_terminal=True)
    piped = Console(file=io.StringIO(), force_terminal=False)
    many = PROGRESS_MIN_FILES + 1
    assert wants_progress(terminal, many, environ={})
    assert not wants_progress(terminal, PROGRESS_MIN_FILES, environ={})
    assert not wants_progress(piped, many, environ={})
    assert not wants_progress(terminal, many, environ={"CI": "true"})


def test_progress_bar_draws_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    output = io.StringIO()
    with progress_bar(Console(file=output, force_terminal=True, width=80), PROGRESS_MIN_FILES + 1) as step:
        for _ in range(PROGRESS_MIN_FILES + 1):
            step()
    assert "checking" in output.getvalue()


def test_long_piped_run_prints_no_progress(tmp_path):
    for index in range(PROGRESS_MIN_FILES + 1):
        (tmp_path / f"m{index}.py").write_text("x = 1\n")
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    result = h2dlint(tmp_path, "--jobs", "1", env=env)
    assert result.returncode == 0
    assert result.stderr == b""
    assert result.stdout.decode() == "All checks passed!\n"


def test_stdin_passes_the_source_through_when_h2dlint_fails(monkeypatch):
    def broken_rule_run(self, source):
        raise RuntimeError("a bug in a rule")

    monkeypatch.setattr(Linter, "lint", broken_rule_run)
    settings = Settings()
    rules = all_rules()
    linter = Linter([rules[code] for code in settings.enabled_codes(rules)], settings)
    raw = BLOCKING.encode()
    result, output = process_stdin(raw, "model.py", linter, "fix")
    assert output == raw
    assert result.error == "internal error: RuntimeError: a bug in a rule"
