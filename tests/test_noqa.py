"""Suppression comments, unused-noqa reporting (HDL003) and --add-noqa, through the real CLI."""

import json

import pytest
from click.testing import CliRunner

from h2dlint.cli import main

from .helpers import COPIES_ANYWHERE

COPY = "torch.tensor([1, 2], device='cuda')"


def run(*args):
    return CliRunner().invoke(main, [*(str(arg) for arg in args), "--config", COPIES_ANYWHERE], catch_exceptions=False)


def check(tmp_path, code, *args):
    path = tmp_path / "example.py"
    path.write_bytes(code.encode() if isinstance(code, str) else code)
    result = run(path, "--output-format", "json", *args)
    return [(finding["code"], finding["location"]["row"]) for finding in json.loads(result.output)]


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: HDL101", "#noqa:HDL101", "# NOQA: E501, HDL101",
                                     "# noqa: E501 HDL101", "# type: ignore  # noqa: HDL101"])
def test_noqa_comment_suppresses(tmp_path, comment):
    assert check(tmp_path, f"import torch\nx = {COPY}  {comment}\n") == []


@pytest.mark.parametrize("comment", ["# noqa: HDL102", "# noqa: E501", "# noqa:HDL10"])
def test_noqa_for_other_codes_does_not_suppress(tmp_path, comment):
    assert check(tmp_path, f"import torch\nx = {COPY}  {comment}\n") == [("HDL101", 2)]


def test_noqa_inside_a_string_is_not_a_comment(tmp_path):
    code = f"import torch\nx = ({COPY}, '# noqa: HDL101')\n"
    assert check(tmp_path, code) == [("HDL101", 2)]


def test_noqa_on_the_last_line_of_a_multiline_finding(tmp_path):
    code = "import torch\nx = torch.tensor(\n    [1, 2],\n    device='cuda',\n)  # noqa: HDL101\n"
    assert check(tmp_path, code) == []


def test_file_level_exemption_must_be_a_comment_line(tmp_path):
    assert check(tmp_path, f"# h2dlint: noqa\nimport torch\nx = {COPY}\n") == []
    assert check(tmp_path, f"# H2DLint:NOQA\nimport torch\nx = {COPY}\n") == []  # in any case, as flake8's
    in_string = f'"""\n# h2dlint: noqa\n"""\nimport torch\nx = {COPY}\n'
    assert check(tmp_path, in_string) == [("HDL101", 5)]
    trailing = f"import torch\nx = {COPY}\ny = 1  # h2dlint: noqa\n"
    assert check(tmp_path, trailing) == [("HDL101", 2)]


def test_unused_noqa_is_opt_in(tmp_path):
    code = "import torch\nx = torch.tensor([1, 2])  # noqa: HDL101\ny = 1  # noqa: E501, HDL999\nz = 2  # noqa\n"
    assert check(tmp_path, code) == []
    assert check(tmp_path, code, "--extend-select", "HDL003") == [("HDL003", 2), ("HDL003", 3)]


def test_used_noqa_is_not_reported_and_unused_fix_keeps_other_codes(tmp_path):
    code = f"import torch\nx = {COPY}  # noqa: HDL101\ny = 1  # noqa: E501, HDL101\n"
    assert check(tmp_path, code, "--extend-select", "HDL003") == [("HDL003", 3)]
    result = run(tmp_path / "example.py", "--extend-select", "HDL003", "--fix")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "example.py").read_text() == f"import torch\nx = {COPY}  # noqa: HDL101\ny = 1  # noqa: E501\n"


def test_add_noqa_makes_the_next_run_clean(tmp_path):
    code = (f"import torch\na = {COPY}\nb = {COPY}  # noqa: E501\nc = {COPY}   \n"
            f"d = ({COPY},\n     '''text\nmore''')\n")
    path = tmp_path / "example.py"
    path.write_text(code)
    result = run(path, "--add-noqa")
    assert result.exit_code == 0
    assert "Added 4 noqa directives." in result.output
    assert path.read_text() == (
        f"import torch\na = {COPY}  # noqa: HDL101\nb = {COPY}  # noqa: E501, HDL101\nc = {COPY}  # noqa: HDL101\n"
        f"d = ({COPY},  # noqa: HDL101\n     '''text\nmore''')\n")
    assert run(path, "--extend-select", "HDL003").exit_code == 0  # every noqa it wrote is used
    assert run(path, "--add-noqa").output.startswith("All checks passed!")


def test_add_noqa_keeps_encoding_and_line_endings(tmp_path):
    code = f"# -*- coding: latin-1 -*-\r\nimport torch\r\nx = {COPY}  # caf\xe9\r\n".encode("latin-1")
    path = tmp_path / "example.py"
    path.write_bytes(code)
    assert run(path, "--add-noqa").exit_code == 0
    assert path.read_bytes() == code.replace(b"caf\xe9\r\n", b"caf\xe9  # noqa: HDL101\r\n")
    assert run(path).exit_code == 0


def test_add_noqa_leaves_syntax_errors_reported(tmp_path):
    path = tmp_path / "broken.py"
    code = f"import torch\ndef f(:\n    return {COPY}\n"
    path.write_text(code)
    result = run(path, "--add-noqa", "--output-format", "concise")
    assert result.exit_code == 0 and "HDL001" in result.output
    assert path.read_text() == code


def test_add_noqa_refuses_fix(tmp_path):
    (tmp_path / "example.py").write_text("x = 1\n")
    assert run(tmp_path, "--add-noqa", "--fix").exit_code == 2
