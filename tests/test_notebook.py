"""Jupyter notebooks: discovered, checked per cell, fixed in place without touching the rest of the file."""

import json
import shutil

import pytest
from click.testing import CliRunner

from h2dlint.cli import main

from .helpers import COPIES_ANYWHERE


@pytest.fixture(autouse=True)
def report_copies_anywhere(tmp_path):
    """A cell's top-level copy is a finding with `copies-outside-hot-code` (by default only copies in code known to
    run every step are)."""
    shutil.copy(COPIES_ANYWHERE, tmp_path / "h2dlint.toml")


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def code_cell(source, outputs=()):
    return {"cell_type": "code", "execution_count": 1, "metadata": {"scrolled": True}, "outputs": list(outputs),
            "source": source}


CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Démo\n", "text"]},
    code_cell(["%matplotlib inline\n", "import torch\n", "!pip list"],
              [{"name": "stdout", "output_type": "stream", "text": ["torch.tensor([1, 2], device='cuda')\n"]}]),
    code_cell(["%%bash\n", "echo torch.tensor([1, 2], device='cuda')"]),
    code_cell(["def step(device):\n", "    %time warm()\n", "    return torch.tensor([1, 2], device='cuda')"]),
    code_cell("y = torch.tensor([3, 4], device='cuda')\n"),
]


def write_notebook(path, cells=CELLS, indent=1):
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}, "zeta": 1, "alpha": 2},
                "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "demo.ipynb"
    write_notebook(path)
    return path


def test_notebooks_are_discovered_and_reported_per_cell(notebook):
    result = run(notebook.parent, "--output-format", "concise")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "HDL101" in line]
    assert [line.split(" HDL101")[0] for line in lines] == [f"{notebook}:cell 4:3:12:", f"{notebook}:cell 5:1:5:"]


def test_json_keeps_cell_relative_positions_and_adds_the_cell(notebook):
    findings = json.loads(run(notebook, "--output-format", "json").output)
    assert [(f["cell"], f["location"], f["end_location"]) for f in findings] == [
        (4, {"row": 3, "column": 12}, {"row": 3, "column": 47}),
        (5, {"row": 1, "column": 5}, {"row": 1, "column": 40})]
    assert findings[0]["fix"]["edits"][0]["location"] == {"row": 3, "column": 12}


def test_full_output_frames_the_cell(notebook):
    output = run(notebook).output
    assert "2 |     %time warm()\n3 |     return torch.tensor([1, 2], device='cuda')" in output


@pytest.mark.parametrize("indent", [1, 2])
def test_fix_rewrites_only_the_fixed_cells(tmp_path, indent):
    path = tmp_path / "demo.ipynb"
    write_notebook(path, indent=indent)
    before = path.read_text(encoding="utf-8")
    result = run(path, "--fix")
    assert result.exit_code == 0, result.output
    after = path.read_text(encoding="utf-8")
    expected = before.replace("    return torch.tensor([1, 2], device='cuda')\"",
                              "    return torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\"")
    expected = expected.replace("y = torch.tensor([3, 4], device='cuda')\\n",
                                "y = torch.tensor([3, 4], pin_memory=True).to('cuda', non_blocking=True)\\n")
    assert after == expected  # outputs, metadata, magics, key order, indent, non-ASCII, final newline kept
    assert run(path).exit_code == 0


def test_diff_shows_cells_and_writes_nothing(notebook):
    before = notebook.read_bytes()
    result = run(notebook, "--diff")
    assert result.exit_code == 1
    assert f"--- {notebook}:cell 4" in result.output
    assert "+    return torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)" in result.output
    assert notebook.read_bytes() == before


def test_noqa_and_add_noqa_in_cells(notebook):
    assert run(notebook, "--add-noqa").exit_code == 0
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    assert cells[3]["source"][-1].endswith("device='cuda')  # noqa: HDL101")
    assert cells[4]["source"] == "y = torch.tensor([3, 4], device='cuda')  # noqa: HDL101\n"
    assert cells[1]["source"] == CELLS[1]["source"]
    assert run(notebook).exit_code == 0


def test_syntax_error_points_at_its_cell_and_broken_json_is_reported(tmp_path):
    path = tmp_path / "broken.ipynb"
    write_notebook(path, [code_cell("import torch\n"), code_cell("x = torch.tensor([1, 2], device='cuda')\ndef f(:\n")])
    result = run(path, "--output-format", "concise")
    assert result.exit_code == 1 and f"{path}:cell 2:2:7: HDL001" in result.output
    path.write_text("{not json")
    result = run(path, "--output-format", "concise")
    assert result.exit_code == 1 and "HDL002 not a readable notebook" in result.output
