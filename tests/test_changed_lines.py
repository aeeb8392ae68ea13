"""--changed-since REF, in real scratch git repositories."""

import json
import os

import pytest
from click.testing import CliRunner

from h2dlint.cli import main

from .helpers import commit_all as commit
from .helpers import git

OLD = "import torch\n\ndef forward(device):\n    return torch.tensor([1], device=device)\n"
BLOCKING = "import torch\nfor step in range(3):\n    x = torch.tensor([1, 2], device='cuda')\n"


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """`main` with two files holding findings, and a branch `feature` checked out from it."""
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "a.py").write_text(OLD)
    (tmp_path / "b.py").write_text(BLOCKING + "    y = torch.tensor([3], device='cuda')\n")
    commit(tmp_path, "base")
    git(tmp_path, "checkout", "-q", "-b", "feature")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def reported(*args):
    result = run(*args, "--output-format", "json")
    assert result.exit_code in (0, 1), result.output
    return sorted((os.path.relpath(finding["filename"]), finding["location"]["row"])
                  for finding in json.loads(result.output))


def test_only_lines_the_branch_added_are_reported(repo):
    # "++ 1" is shown by git as "+++ 1": a body line that looks like a file header.
    (repo / "a.py").write_text(OLD.replace("\n\n", "\n++ 1\n\n", 1)
                               + "\ndef step(device):\n    return torch.tensor([2], device=device)\n")
    (repo / "café.py").write_text(BLOCKING)  # git quotes this name: "caf\303\251.py"
    (repo / "with space.py").write_text(BLOCKING)  # git ends this name's header line with a tab
    commit(repo, "feature work")
    # Meanwhile main deletes a finding's line in b.py, which the branch keeps: not the branch's change.
    git(repo, "checkout", "-q", "main")
    (repo / "b.py").write_text(BLOCKING)
    commit(repo, "main moves on")
    git(repo, "checkout", "-q", "feature")
    (repo / "uncommitted.py").write_text(OLD)  # not tracked yet: every line is new

    assert len(reported(".")) == 7
    assert reported(".", "--changed-since", "main") == [
        ("a.py", 8), ("café.py", 3), ("uncommitted.py", 4), ("with space.py", 3)]
    assert reported("a.py", "--changed-since", "main") == [("a.py", 8)]
    result = run("--changed-since", "main", "--output-format", "concise")
    assert result.exit_code == 1 and "Found 4 errors." in result.output


def test_a_finding_counts_when_any_of_its_lines_changed(repo):
    (repo / "a.py").write_text(OLD.replace("torch.tensor([1], device=device)",
                                           "torch.tensor(\n        [1],\n        device=device,\n    )"))
    commit(repo, "split the call")
    (repo / "a.py").write_text((repo / "a.py").read_text().replace("[1]", "[1, 2]"))
    assert reported("--changed-since", "HEAD") == [("a.py", 4)]
    assert run("--changed-since", "feature~1").exit_code == 1


def test_no_changes_report_nothing_and_exit_0(repo):
    result = run("--changed-since", "main")
    assert result.exit_code == 0 and "All checks passed!" in result.output


def test_unknown_ref_not_a_repository_and_fix_are_errors(repo, tmp_path_factory, monkeypatch):
    unknown = run("--changed-since", "no-such-branch")
    assert unknown.exit_code == 2 and "unknown git ref 'no-such-branch'" in unknown.output
    option_like = run("--changed-since", "--output=x")
    assert option_like.exit_code == 2 and not (repo / "x").exists()
    refused = run("--changed-since", "main", "--fix")
    assert refused.exit_code == 2 and "cannot be combined with --fix" in refused.output
    outside = tmp_path_factory.mktemp("not_a_repo")
    (outside / "a.py").write_text(BLOCKING)
    monkeypatch.chdir(outside)
    result = run("a.py", "--changed-since", "main")
    assert result.exit_code == 2 and "--changed-since needs the checked paths to be in a git repository" in result.output
