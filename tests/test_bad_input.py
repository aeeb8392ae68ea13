"""Bad and unusual input, through the CLI: a clear per-file message or correct handling, the run goes on."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from h2dlint.cli import main
from h2dlint.engine import _non_overlapping
from h2dlint.model import Applicability, Edit, Fix, Position
from h2dlint.source import FileChangedError, read_source, write_source_atomically

from .helpers import COPIES_ANYWHERE

BLOCKING = "import torch\nx = torch.tensor([1, 2], device='cuda')\n"
FIXED = "import torch\nx = torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\n"


def run(*args):
    result = CliRunner().invoke(main, [*map(str, args), "--output-format", "concise",
                                             # mostly one-line modules: their module-level copy is a finding
                                             "--config", COPIES_ANYWHERE],
                                catch_exceptions=False)
    assert "internal error" not in result.output, result.output
    return result


@pytest.fixture
def tree(tmp_path):
    """A folder holding the bad file under test next to one ordinary fixable file."""
    (tmp_path / "ordinary.py").write_text(BLOCKING)
    return tmp_path


def assert_run_went_on(tree):
    assert (tree / "ordinary.py").read_text() == FIXED


def test_syntax_error_reports_file_and_line_and_is_never_modified(tree):
    content = b"import torch\nx = torch.tensor([1, 9], device='cuda')\ndef f(:\n    pass\n"
    (tree / "broken.py").write_bytes(content)
    result = run(tree, "--fix")
    assert result.exit_code == 1
    assert f"{tree / 'broken.py'}:3:7: HDL001 SyntaxError: invalid syntax" in result.output
    assert (tree / "broken.py").read_bytes() == content
    assert_run_went_on(tree)


def test_undecodable_bytes_are_hdl002_and_left_alone(tree):
    content = b"import torch\nname = '\xff\xfe'\nx = torch.tensor([1, 9], device='cuda')\n"
    (tree / "binary.py").write_bytes(content)
    result = run(tree, "--fix")
    assert result.exit_code == 1
    assert f"{tree / 'binary.py'}:1:1: HDL002 cannot decode: 'utf-8' codec can't decode byte 0xff" in result.output
    assert (tree / "binary.py").read_bytes() == content
    assert_run_went_on(tree)


def test_latin1_cookie_is_kept_and_non_ascii_bytes_survive(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\n"
                     b"x = torch.tensor([1, 9], device='cuda')\n")
    assert run(path, "--fix").exit_code == 0
    assert path.read_bytes() == (b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\n"
                                 b"x = torch.tensor([1, 9], pin_memory=True).to('cuda', non_blocking=True)\n")


def test_bom_and_crlf_are_kept(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbf" + BLOCKING.replace("\n", "\r\n").encode())
    assert run(path, "--fix").exit_code == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()


def test_mixed_line_endings_keep_each_line_ending(tmp_path):
    path = tmp_path / "mixed.py"
    path.write_bytes(b"import torch\r\nx = torch.tensor([1, 9], device='cuda')\ny = torch.tensor([2, 9],\r\n"
                     b"    device='cuda')\r\n")
    assert run(path, "--fix").exit_code == 0
    assert path.read_bytes() == (b"import torch\r\nx = torch.tensor([1, 9], pin_memory=True).to('cuda', non_blocking=True)"
                                 b"\ny = torch.tensor([2, 9],\r\n    pin_memory=True).to('cuda', non_blocking=True)\r\n")


def test_tabs_and_form_feeds(tmp_path):
    path = tmp_path / "tabs.py"
    path.write_bytes(b"import torch\n\x0c\nif True:\n\tx = torch.tensor([1, 9],\tdevice='cuda')\n\x0c\ny = 1\n")
    assert run(path, "--fix").exit_code == 0
    assert path.read_bytes() == (b"import torch\n\x0c\nif True:\n\tx = torch.tensor([1, 9],\tpin_memory=True)"
                                 b".to('cuda', non_blocking=True)\n\x0c\ny = 1\n")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.py"
    path.write_bytes(b"")
    result = run(path, "--fix")
    assert result.exit_code == 0 and "All checks passed!" in result.output
    assert path.read_bytes() == b""


def test_very_large_file_is_checked_and_fixed_whole(tmp_path):
    lines = ["import torch", "def forward(n, device):"]
    lines += [f"    x{i} = torch.tensor([{i}, n], device='cuda')" if i % 10_000 == 0 else f"    y = {i}  # line {i}"
              for i in range(50_000)]
    path = tmp_path / "large.py"
    path.write_text("\n".join(lines) + "\n")
    result = run(path, "--fix")
    assert result.exit_code == 0 and "Found 5 errors (5 fixed, 0 remaining)." in result.output
    fixed = path.read_text()
    assert fixed.count("non_blocking=True") == 5 and len(fixed.splitlines()) == 50_002
    ast.parse(fixed)


def test_choosing_among_many_fixes_is_not_quadratic():
    """5000 fixes in one file: choosing the non-overlapping ones was quadratic (a minute); now instant."""
    fixes = [Fix((Edit(Position(line, 4), Position(line, 20), "new"),), Applicability.SAFE, "fix")
             for line in range(1, 5001)]
    shared_import = Edit(Position(1, 0), Position(1, 0), "import torch\n")
    fixes += [Fix((shared_import, Edit(Position(line, 30), Position(line, 40), "x")), Applicability.SAFE, "fix")
              for line in range(1, 5001)]
    overlapping = Fix((Edit(Position(7, 10), Position(7, 35), "y"),), Applicability.SAFE, "overlaps two")
    chosen = _non_overlapping([*fixes, overlapping])
    assert len(chosen) == 10_000 and overlapping not in chosen


def nested(depth: int) -> str:
    return "x = torch.tensor(" + "[" * depth + "1" + "]" * depth + ", device='cuda')"


@pytest.mark.parametrize("depth", [3_000, 20_000])  # RecursionError; MemoryError from the parser's stack guard
def test_nesting_too_deep_for_pythons_parser_is_hdl001(tmp_path, depth):
    path = tmp_path / "deep.py"
    content = "import torch\nx = torch.tensor(" + "-" * depth + "1, device='cuda')\n"
    path.write_text(content)
    result = run(path, "--fix")
    assert result.exit_code == 1
    assert f"{path}:1:1: HDL001 code nested too deeply for Python's parser (" in result.output
    assert path.read_text() == content


@pytest.mark.parametrize("full_parse", [False, True], ids=["fast", "full"])
def test_nesting_too_deep_for_libcst_is_hdl002_at_the_call(tmp_path, full_parse):
    # Valid Python that CPython compiles, but LibCST's visitors recurse too deep on.
    path = tmp_path / "deep.py"
    content = f"import torch\ny = torch.tensor([2, 9], device='cuda')\n{nested(180)}\n"
    compile(content, "deep.py", "exec")
    path.write_text(content)
    result = run(path, "--fix", *(["--full-parse"] if full_parse else []))
    assert result.exit_code == 1
    where = "1:1" if full_parse else "3:5"
    assert f"{path}:{where}: HDL002 code nested too deeply (RecursionError); h2dlint does not check or change it" \
        in result.output
    fixed_lines = path.read_text().splitlines()
    assert fixed_lines[2] == nested(180)
    if not full_parse:  # the other call is still checked and fixed
        assert fixed_lines[1] == "y = torch.tensor([2, 9], pin_memory=True).to('cuda', non_blocking=True)"


def test_code_libcst_cannot_parse_is_hdl002(tmp_path):
    path = tmp_path / "strings.py"
    content = "import torch\nx = torch.tensor(" + "'a' " * 5000 + ", device='cuda')\n"
    path.write_text(content)
    result = run(path, "--fix")
    assert result.exit_code == 1
    assert f"{path}:2:5: HDL002 code not parsed by LibCST (ParserSyntaxError)" in result.output
    assert path.read_text() == content


def test_symlinks_are_not_followed_when_walking(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.py").write_text(BLOCKING)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "own.py").write_text(BLOCKING)
    (tree / "loop").symlink_to(tree)
    (tree / "out").symlink_to(outside)
    (tree / "linked.py").symlink_to(outside / "elsewhere.py")
    result = run(tree, "--fix")
    assert result.exit_code == 0, result.output
    assert "Found 1 error (1 fixed, 0 remaining)." in result.output
    assert (tree / "own.py").read_text() == FIXED
    assert (outside / "elsewhere.py").read_text() == BLOCKING


def test_symlinked_file_named_explicitly_is_checked_but_never_rewritten(tmp_path):
    target = tmp_path / "outside.py"
    target.write_text(BLOCKING)
    (tmp_path / "tree").mkdir()
    link = tmp_path / "tree" / "link.py"
    link.symlink_to(target)
    assert run(link).exit_code == 1
    result = run(link, "--fix")
    assert result.exit_code == 2
    assert f"error: {link}: {link} is a symbolic link; not rewritten" in result.output
    assert link.is_symlink() and target.read_text() == BLOCKING


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_hdl002(tree):
    path = tree / "secret.py"
    path.write_text(BLOCKING)
    path.chmod(0)
    try:
        result = run(tree, "--fix")
    finally:
        path.chmod(0o644)
    assert f"{path}:1:1: HDL002 cannot read: Permission denied" in result.output
    assert path.read_text() == BLOCKING
    assert_run_went_on(tree)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_is_not_read(tree):
    """Reading a FIFO nobody writes to would block forever; it is reported instead."""
    os.mkfifo(tree / "pipe.py")
    result = run(tree / "pipe.py", tree / "ordinary.py", "--fix")
    assert result.exit_code == 1
    assert f"{tree / 'pipe.py'}:1:1: HDL002 not a regular file; not read" in result.output
    assert_run_went_on(tree)


def test_folder_named_like_a_python_file_is_walked(tmp_path):
    folder = tmp_path / "x.py"
    folder.mkdir()
    (folder / "inner.py").write_text(BLOCKING)
    result = run(tmp_path, "--fix")
    assert result.exit_code == 0, result.output
    assert (folder / "inner.py").read_text() == FIXED
    assert run(folder).exit_code == 0


def test_file_changed_between_read_and_write_is_not_overwritten(tmp_path):
    path = tmp_path / "racy.py"
    path.write_text(BLOCKING)
    source = read_source(path)
    path.write_text(BLOCKING + "# edited meanwhile\n")
    with pytest.raises(FileChangedError, match="changed on disk since it was read; not overwritten"):
        write_source_atomically(source, FIXED)
    assert path.read_text() == BLOCKING + "# edited meanwhile\n"
    assert os.listdir(tmp_path) == ["racy.py"]


def test_file_deleted_between_read_and_write_is_not_recreated(tmp_path):
    path = tmp_path / "gone.py"
    path.write_text(BLOCKING)
    source = read_source(path)
    path.unlink()
    with pytest.raises(FileChangedError, match="is gone"):
        write_source_atomically(source, FIXED)
    assert os.listdir(tmp_path) == []


def test_file_already_holding_the_same_fix_is_fine(tmp_path):
    """Another run wrote exactly this fix meanwhile: nothing to do, no error."""
    path = tmp_path / "same.py"
    path.write_text(BLOCKING)
    source = read_source(path)
    path.write_text(FIXED)
    write_source_atomically(source, FIXED)
    assert path.read_text() == FIXED and os.listdir(tmp_path) == ["same.py"]


NEW_SYNTAX = {
    "pep695.py": "import torch\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"
                 "class Box[T]:\n    pass\n"
                 "x = torch.tensor([1, 9], device='cuda')\n",
    "multi_line_parameters.py": "import torch\ndef f[\n    T,  # the item type\n](x: T):\n    return x\n"
                                "x = torch.tensor([1, 9], device='cuda')\n",
    "type_alias.py": "import torch\ntype Pair[T] = tuple[T, T]\nx = torch.tensor([1, 9], device='cuda')\n",
    "pep701.py": "import torch\nname = f\"{f\"{1}\"}\"\nlabel = f\"{ {'a': 1}[\"a\"] }\"\n"
                 "x = torch.tensor([1, 9], device='cuda')\n",
}


@pytest.mark.parametrize("name", sorted(NEW_SYNTAX))
def test_syntax_newer_than_the_running_python_is_checked_and_fixed(tmp_path, name):
    """Python 3.12 syntax (PEP 695, PEP 701): checked and fixed on 3.11 too, through LibCST's parser."""
    content = NEW_SYNTAX[name]
    path = tmp_path / name
    path.write_text(content)
    checked = run(path)
    assert checked.exit_code == 1 and "HDL001" not in checked.output
    assert f"{path}:{content.count(chr(10))}:5: HDL101" in checked.output
    result = run(path, "--fix")
    assert result.exit_code == 0, result.output
    assert path.read_text() == content.replace("device='cuda')", "pin_memory=True).to('cuda', non_blocking=True)")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 parses it")
def test_newer_syntax_without_a_stand_in_names_the_python_it_needs(tmp_path):
    # a type parameter list holding an empty line: no stand-in keeps its lines and parses
    content = "import torch\ndef f[\n\n    T,\n](x: T):\n    return torch.tensor([1, 9], device='cuda')\n"
    path = tmp_path / "empty_line_in_parameters.py"
    path.write_text(content)
    result = run(path, "--fix")
    assert result.exit_code == 1
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert (f"{path}:2:6: HDL001 SyntaxError: uses syntax of Python 3.12 (type parameter lists); "
            f"h2dlint runs on Python {running}; the file is not checked or changed") in result.output
    assert path.read_text() == content
    # A plain syntax error still says what Python's parser says.
    (tmp_path / "broken.py").write_text("import torch\nx = torch.tensor([1], device='cuda')\ndef f(:\n")
    assert "HDL001 SyntaxError: invalid syntax" in run(tmp_path / "broken.py").output


def test_stub_files_are_checked_and_fixed(tmp_path):
    path = tmp_path / "module.pyi"
    path.write_text("import torch\nx: torch.Tensor = torch.tensor([1, 9], device='cuda')\n")
    assert run(tmp_path).exit_code == 1
    assert run(tmp_path, "--fix").exit_code == 0
    assert path.read_text() == "import torch\nx: torch.Tensor = torch.tensor([1, 9], pin_memory=True)" \
                               ".to('cuda', non_blocking=True)\n"


def test_h2dlint_temporary_files_are_never_picked_up(tmp_path):
    (tmp_path / ".mod.py.abc123.h2dlint").write_text(BLOCKING)
    assert run(tmp_path).exit_code == 0
    assert Path(tmp_path / ".mod.py.abc123.h2dlint").read_text() == BLOCKING


def test_runs_of_comment_marks_after_call_names_do_not_stall_the_prefilters(tmp_path):
    # The prefilters allow comments between a name and its `(`; a comment that could end at any later `#` once
    # made their regexes try every way to split a run of `#`s: hours for one line of 40 of them.
    run_of_marks = "#" * 40
    lines = [f"x = f(device={run_of_marks}", f"y = t.to({run_of_marks}", f"z = torch.tensor {run_of_marks}",
             f"w = torch.nonzero {run_of_marks}", f"v = x.item {run_of_marks}", f"u = t[0] {run_of_marks}"]
    (tmp_path / "marks.py").write_text("import torch\n" + "\n".join(line + "\n)" for line in lines) + "\n")
    code = ("import sys\nfrom h2dlint.cli import main\n"
            f"sys.argv = ['h2dlint', 'check', {str(tmp_path)!r}, '--select', 'ALL', '--no-cache', '--exit-zero']\nmain()\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)


def test_a_name_ending_each_line_of_a_comment_block_does_not_stall_the_tuple_prefilters(tmp_path):
    # The tuple prefilters look past comment lines between a name and its `(` (`(x.nonzero  # why\n ())`). Were
    # each `nonzero` of a block like this one to read the block to its end again, 40,000 lines would take minutes
    # (19 s for 20,000); a failed attempt resumes past the comments it read.
    (tmp_path / "names.py").write_text("import torch\n" + "# x.nonzero\n" * 40000 + "z = 1\n")
    code = ("import sys\nfrom h2dlint.cli import main\n"
            f"sys.argv = ['h2dlint', 'check', {str(tmp_path)!r}, '--select', 'HDL301', '--no-cache', '--exit-zero']\n"
            "main()\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)


def test_comment_blocks_and_runs_of_marks_do_not_stall_the_searches_across_comments(tmp_path):
    # Every text test looks for its tokens across comment lines (`(x.cuda  # why\n ())`), where a comment is
    # followed by one of the tokens. Reading each block again from every first token in it, or a run of `#` again
    # from each of its marks, would take hours here; each is read once (0.3 s).
    firsts = (".", "tensor", "cuda", "device", "device=", "]", ")", "requires_grad", ".to(", "tensor as")
    text = "import torch\n" + "".join(f"# x{first}\n" * 20000 for first in firsts) + "#" * 200000 + "\n# c\n(1)\n"
    (tmp_path / "comments.py").write_text(text)
    code = ("import sys\nfrom h2dlint.cli import main\n"
            f"sys.argv = ['h2dlint', 'check', {str(tmp_path)!r}, '--select', 'ALL', '--no-cache', '--exit-zero']\nmain()\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)


def test_long_commented_out_blocks_do_not_stall_the_prefilters(tmp_path):
    # HDL404 and HDL501 look for `)` then `.to` and for `graph` then `(` across comment lines. One regex holding
    # the comments retried from every `)` or `graph` inside a comment block, to the block's end: 13 s for 10,000
    # lines, growing with the square. They now resume where a failed attempt stopped.
    text = ("import torch\nx = torch.zeros(1, requires_grad=True)\ny = f(x)\n" + "# graph f(x)\n" * 20000
            + "graph = 1\n" + "# f(x) graph\n" * 20000 + "z = 1\n")
    (tmp_path / "commented_out.py").write_text(text)
    code = ("import sys\nfrom h2dlint.cli import main\n"
            f"sys.argv = ['h2dlint', 'check', {str(tmp_path)!r}, '--select', 'ALL', '--no-cache', '--exit-zero']\nmain()\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)
