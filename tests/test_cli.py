"""The `h2dlint` command, through click's runner and as a real subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from h2dlint import __version__
from h2dlint.cli import main

BLOCKING = "import torch\n\ndef forward(device):\n    return torch.tensor([1, 2, 3], device=device)\n"
SAFE_FIXABLE = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"
CLEAN = "import torch\nx = torch.tensor([1, 2])\n"


def run(*args, cwd=None):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "blocking.py").write_text(BLOCKING)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_findings_exit_1_and_clean_exit_0(tree):
    result = run(tree / "blocking.py")
    assert result.exit_code == 1
    assert "blocking.py:4:12: HDL101" in result.output
    assert "Found 1 error." in result.output
    clean = run(tree / "clean.py")
    assert clean.exit_code == 0 and "All checks passed!" in clean.output


def test_check_subcommand_is_the_default(tree):
    assert run("check", tree).output == run(tree).output


def test_full_output_shows_code_frame_and_proposed_fix(tree):
    output = run(tree / "blocking.py", "--output-format", "full").output
    assert "4 |     return torch.tensor([1, 2, 3], device=device)" in output
    assert "^^^^" in output
    assert "Safe fix: Build the tensor in pinned memory" in output
    assert "+     return torch.tensor([1, 2, 3], pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)" \
        in output


def test_json_output_is_ruff_compatible(tree):
    result = run(tree / "blocking.py", "--output-format", "json")
    assert result.exit_code == 1
    [finding] = json.loads(result.output)
    assert finding["code"] == "HDL101"
    assert finding["filename"] == str(tree / "blocking.py")
    assert finding["location"] == {"row": 4, "column": 12}
    assert finding["end_location"] == {"row": 4, "column": 50}
    assert finding["fix"]["applicability"] == "safe"
    [edit] = finding["fix"]["edits"]
    assert edit["location"] == {"row": 4, "column": 12} and edit["end_location"] == {"row": 4, "column": 50}
    assert edit["content"].endswith(".to(device, non_blocking=True)")
    assert finding["name"] == "blocking-tensor-copy" and finding["noqa_row"] == 4 and finding["cell"] is None
    assert finding["url"].startswith("file://") and finding["url"].endswith("hdl101_blocking_tensor_copy.py")


def _shape(value):
    """The keys of a JSON value, nested, without the values."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None


def test_json_has_ruffs_keys_in_ruffs_order(tmp_path):
    """The same file through Ruff (an unused import, with a fix) and h2dlint: the same keys, nested, in the
    same order, and the same kinds of values (an absolute filename, a number noqa_row, a url)."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed (it is in the test extra)")
    path = tmp_path / "both.py"
    path.write_text("import os\n" + BLOCKING)
    ruffs = json.loads(subprocess.run([str(ruff), "check", "--no-cache", "--select", "F401", "--output-format",
                                       "json", "both.py"], capture_output=True, text=True, cwd=tmp_path).stdout)
    ours = json.loads(run(path, "--output-format", "json", "--no-cache").output)
    assert ruffs and ours
    # h2dlint's own key, `evidence` (why the code runs every step), is the one Ruff lacks.
    assert set(ours[0]) - set(ruffs[0]) == {"evidence"}
    ours[0].pop("evidence")
    assert json.dumps(_shape(ours[0])) == json.dumps(_shape(ruffs[0]))
    for theirs, mine in ((ruffs[0], ours[0]), (ruffs[0]["fix"], ours[0]["fix"])):
        assert {key: type(value) for key, value in mine.items()} == {key: type(value) for key, value in theirs.items()}
    assert ours[0]["filename"] == ruffs[0]["filename"] == str(path)


def test_fix_rewrites_and_exits_0_when_nothing_is_left(tree):
    result = run(tree / "blocking.py", "--fix")
    assert result.exit_code == 0, result.output
    assert "pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)" in \
        (tree / "blocking.py").read_text()
    assert run(tree / "blocking.py").exit_code == 0


def test_unsafe_fix_needs_the_flag(tmp_path):
    path = tmp_path / "unsafe.py"
    original = "import torch\ndef forward(x, device):\n    return torch.tensor(x, device=device)\n"
    path.write_text(original)
    result = run(path, "--fix")
    assert result.exit_code == 1 and path.read_text() == original
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in result.output
    result = run(path, "--fix", "--unsafe-fixes")
    assert result.exit_code == 0 and path.read_text() != original


def test_diff_writes_nothing_and_exits_1(tree):
    before = (tree / "blocking.py").read_text()
    result = run(tree / "blocking.py", "--diff")
    assert result.exit_code == 1
    assert "-    return torch.tensor([1, 2, 3], device=device)" in result.output
    assert (tree / "blocking.py").read_text() == before
    assert run(tree / "clean.py", "--diff").exit_code == 0


def test_select_ignore_prefixes_and_all(tree):
    assert run(tree, "--select", "HDL1").exit_code == 1
    assert run(tree, "--select", "ALL").exit_code == 1
    assert run(tree, "--ignore", "HDL101").exit_code == 0
    assert run(tree, "--select", "HDL", "--ignore", "HDL1").exit_code == 0


def test_unknown_selector_is_a_usage_error(tree):
    result = run(tree, "--select", "XYZ9")
    assert result.exit_code == 2
    assert "unknown rule selector 'XYZ9'" in result.output


def test_exit_zero(tree):
    assert run(tree, "--exit-zero").exit_code == 0


def test_exit_non_zero_on_fix_tells_that_a_file_changed(tree):
    result = run(tree / "blocking.py", "--fix", "--exit-non-zero-on-fix")
    assert result.exit_code == 1, result.output
    assert "non_blocking=True" in (tree / "blocking.py").read_text()
    assert run(tree / "blocking.py", "--fix", "--exit-non-zero-on-fix").exit_code == 0  # nothing left to fix
    assert run(tree, "--exit-zero", "--exit-non-zero-on-fix").exit_code == 2


def test_per_file_ignores_on_the_command_line_replace_or_extend_the_configured_ones(tree):
    assert run(tree, "--per-file-ignores", "blocking.py:HDL101").exit_code == 0
    assert run(tree, "--per-file-ignores", "clean.py:HDL101,other.py:HDL1").exit_code == 1
    (tree / "pyproject.toml").write_text('[tool.h2dlint]\nper-file-ignores = { "blocking.py" = ["HDL1"] }\n')
    assert run(tree).exit_code == 0
    assert run(tree, "--per-file-ignores", "clean.py:HDL1").exit_code == 1  # replaces the file's
    assert run(tree, "--extend-per-file-ignores", "clean.py:HDL1").exit_code == 0  # adds to them
    for bad, message in [("blocking.py", "takes GLOB:CODE pairs"), ("blocking.py:XYZ9", "unknown rule selector")]:
        result = run(tree, "--per-file-ignores", bad)
        assert result.exit_code == 2 and message in result.output


def test_no_cache_is_accepted(tree):
    assert run(tree, "--no-cache").exit_code == 1


def test_rule_command_prints_docs():
    result = run("rule", "HDL101")
    assert result.exit_code == 0
    for section in ("## What it does", "## Why is this bad?", "## Fix safety"):
        assert section in result.output
    assert run("rule", "NOPE1").exit_code == 2
    assert "HDL101" in run("rule", "--all").output


def test_version():
    assert __version__ in run("--version").output


def test_syntax_error_is_a_finding_and_the_run_goes_on(tree):
    broken = tree / "broken.py"
    content = b"import torch\ndef f(:\n    return torch.tensor([1], device='cuda')\n"
    broken.write_bytes(content)
    result = run(tree, "--fix", "--output-format", "concise")
    assert result.exit_code == 1
    assert "broken.py:2:7: HDL001 SyntaxError" in result.output
    assert broken.read_bytes() == content
    assert "pin_memory" in (tree / "blocking.py").read_text()


def test_real_subprocess_console_script_and_module(tree):
    script = Path(sys.executable).parent / "h2dlint"
    for command in ([str(script)] if script.exists() else []) + [[sys.executable, "-m", "h2dlint"]]:
        command = command if isinstance(command, list) else [command]
        completed = subprocess.run([*command, str(tree), "--output-format", "concise"], capture_output=True, text=True)
        assert completed.returncode == 1, completed.stderr
        assert "HDL101" in completed.stdout
        completed = subprocess.run([*command, str(tree / "clean.py")], capture_output=True, text=True)
        assert completed.returncode == 0


def test_the_fast_exit_delivers_the_whole_report(tmp_path):
    # The entry point leaves with os._exit, skipping Python's own flush at exit: a report longer than the
    # output buffers must still arrive whole, through a pipe and in an output file, with the right exit code.
    sites = "def forward(xs, device):\n" + "".join(f"    t{index} = torch.tensor(xs, device=device)\n" for index in range(600))
    (tmp_path / "many.py").write_text("import torch\n" + sites)
    command = [sys.executable, "-m", "h2dlint", "check", str(tmp_path / "many.py"), "--no-cache",
               "--output-format", "concise"]
    piped = subprocess.run(command, capture_output=True, text=True)
    assert piped.returncode == 1, piped.stderr
    assert len(piped.stdout) > 65536  # more than a pipe holds
    assert piped.stdout.count(" HDL101 ") == 600
    assert "Found 600 errors." in piped.stdout
    written = subprocess.run([*command, "-o", str(tmp_path / "report.txt"), "--exit-zero"], capture_output=True)
    assert written.returncode == 0
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == piped.stdout


def test_missing_path_is_an_error(tmp_path):
    result = run(tmp_path / "nope.py")
    assert result.exit_code == 2
    assert "no such file or directory" in result.output
    assert "All checks passed!" not in result.output
    (tmp_path / "clean.py").write_text(CLEAN)  # nor does a clean file beside it make the run pass
    result = run(tmp_path / "clean.py", tmp_path / "nope.py")
    assert result.exit_code == 2 and "All checks passed!" not in result.output
