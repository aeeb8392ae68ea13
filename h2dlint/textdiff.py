"""The unified diff `--diff` prints, in time that grows with the file rather than with its square.

difflib's matcher looks for the longest common run of lines again in every stretch between the runs it
found, so a long file with fixes spread all over it costs about the product of its length and the number of
fixes. Here the lines that occur once in each text (a function's `def` line, most lines a fix leaves alone)
are matched first, as patience diff does, and difflib only compares the short stretches between them.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Iterator, Sequence


def unified_diff(old: str, new: str, name: str, context: int = 3) -> str:
    """What --diff prints for one file: difflib.unified_diff's format, headers `--- name` and `+++ name`."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    return "".join(_unified_lines(a, b, name, context))


def _unified_lines(a: list[str], b: list[str], name: str, context: int) -> Iterator[str]:
    matcher = _AnchoredMatcher(a, b)
    for index, group in enumerate(matcher.get_grouped_opcodes(context)):
        if index == 0:
            yield f"--- {name}\n"
            yield f"+++ {name}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (`3,2`; `3` for one line; `2,0` for none, after line 2)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


class _AnchoredMatcher(difflib.SequenceMatcher):
    """difflib's matcher, with its matching blocks found between anchors: the lines unique to each text."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b)
        self._lines = (a, b)
        self._blocks: list[difflib.Match] | None = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self._blocks is None:
            self._blocks = anchored_matching_blocks(*self._lines)
        return self._blocks


def anchored_matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[difflib.Match]:
    """What SequenceMatcher.get_matching_blocks returns: (i, j, size) runs of equal lines, ascending, adjacent
    runs merged, ending with (len(a), len(b), 0)."""
    runs: list[tuple[int, int, int]] = []
    done_a = done_b = 0
    for i, j in [*_anchors(a, b), (len(a), len(b))]:
        gap = difflib.SequenceMatcher(None, a[done_a:i], b[done_b:j])
        runs += [(done_a + x, done_b + y, size) for x, y, size in gap.get_matching_blocks() if size]
        if i < len(a):
            runs.append((i, j, 1))
        done_a, done_b = i + 1, j + 1
    merged: list[tuple[int, int, int]] = []
    for i, j, size in runs:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    return [difflib.Match(*run) for run in [*merged, (len(a), len(b), 0)]]


def _anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs (i, j) with a[i] == b[j] a line that occurs once in each text: the longest chain of them that
    ascends in both texts (found in n log n, by patience sorting)."""
    count_a, count_b = Counter(a), Counter(b)
    where_in_b = {line: j for j, line in enumerate(b) if count_b[line] == 1}
    pairs = [(i, where_in_b[line]) for i, line in enumerate(a) if count_a[line] == 1 and line in where_in_b]
    # tails[k]: the index in `pairs` of the smallest j that ends an ascending chain of length k + 1
    tails: list[int] = []
    tail_js: list[int] = []
    previous: list[int] = []
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tail_js, j)
        previous.append(tails[length - 1] if length else -1)
        if length == len(tails):
            tails.append(index)
            tail_js.append(j)
        else:
            tails[length] = index
            tail_js[length] = j
    chain = []
    index = tails[-1] if tails else -1
    while index >= 0:
        chain.append(pairs[index])
        index = previous[index]
    return chain[::-1]
