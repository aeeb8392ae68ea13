"""--diff's unified diff: difflib's output, found through anchors (lines unique to both texts)."""

import difflib
import random

from h2dlint.textdiff import anchored_matching_blocks, unified_diff

from .helpers import fix


def difflib_diff(old: str, new: str, name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), name, name))


def functions(count: int) -> str:
    return "import torch\n" + "".join(
        f"\n\ndef step_{index}(device, values):\n    total = 0\n    for value in values:\n        total += value\n"
        f"    return torch.tensor([total, {index}], device=device)\n" for index in range(count))


def test_a_fix_in_every_function_gives_difflibs_diff():
    old = functions(300)
    new = fix(old, "HDL101", copies_outside_hot_code=True)  # nothing calls the functions: not known hot
    assert new.count("non_blocking=True") == 300
    assert unified_diff(old, new, "file.py") == difflib_diff(old, new, "file.py")


def patched(old_lines: list[str], new_lines: list[str]) -> tuple[list[str], list[str]]:
    """Both texts back from the matching blocks: the equal runs from `old`, the rest from each side."""
    rebuilt_old, rebuilt_new, i, j = [], [], 0, 0
    for block_i, block_j, size in anchored_matching_blocks(old_lines, new_lines):
        rebuilt_old += old_lines[i:block_i]
        rebuilt_new += new_lines[j:block_j]
        assert old_lines[block_i:block_i + size] == new_lines[block_j:block_j + size]
        rebuilt_old += old_lines[block_i:block_i + size]
        rebuilt_new += old_lines[block_i:block_i + size]
        i, j = block_i + size, block_j + size
    return rebuilt_old, rebuilt_new


def test_random_edits_give_blocks_that_rebuild_both_texts():
    generator = random.Random(7)
    for _ in range(300):
        old = [generator.choice("abcdefgh") + "\n" for _ in range(generator.randrange(0, 30))]
        new = list(old)
        for _ in range(generator.randrange(0, 6)):
            position = generator.randrange(0, len(new) + 1)
            if new and generator.random() < 0.5:
                del new[min(position, len(new) - 1)]
            else:
                new.insert(position, generator.choice("abcdefghxyz") + "\n")
        assert patched(old, new) == (old, new)
        blocks = anchored_matching_blocks(old, new)
        assert blocks[-1] == (len(old), len(new), 0)
        assert all(first.a + first.size <= second.a and first.b + first.size <= second.b
                   for first, second in zip(blocks, blocks[1:], strict=False))
        text_old, text_new = "".join(old), "".join(new)
        diff = unified_diff(text_old, text_new, "f")
        assert (diff == "") == (text_old == text_new)


def test_per_line_tables_hold_what_a_scan_of_every_function_and_loop_finds():
    """FileFacts answers "which functions, loops and other if-arms hold this line" from tables built in one
    pass; they must hold what testing every node finds."""
    import ast

    from h2dlint.facts import FileFacts
    from h2dlint.source import LineIndex

    text = ("import torch\n"
            "def outer(xs):\n"
            "    f = lambda y: (y,\n"
            "                   lambda z: z)\n"
            "    for x in xs:\n"
            "        if x:\n"
            "            def inner():\n"
            "                while True:\n"
            "                    return 1\n"
            "        else:\n"
            "            pass\n"
            "    return f\n"
            "async def later():\n"
            "    pass\n")
    tree = ast.parse(text)
    facts = FileFacts(tree, LineIndex(text))
    nodes = sorted((node for node in ast.walk(tree)
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))),
                   key=lambda node: (node.lineno, node.col_offset))
    for line in range(0, text.count("\n") + 3):
        expected = tuple(node for node in nodes if node.lineno <= line <= node.end_lineno)
        assert facts.functions_around(line) == expected, line
        loops, other_arms = facts._blocks_at(line)
        assert list(loops) == [loop for loop in facts.loops if loop[0] <= line <= loop[1]]
        assert list(other_arms) == [other for body, orelse in facts.if_arms
                                    for arm, other in ((body, orelse), (orelse, body)) if arm[0] <= line <= arm[1]]
    assert facts.functions_around(4)[-1].lineno == 4 and facts._blocks_at(11)[1] == ((7, 9),)
