"""Searching a file's text for tokens that Python lets stand apart.

The text tests that decide which files are parsed must find every spelling the parser accepts, or the fast path
would miss findings that a whole-file parse reports. Between two tokens Python accepts blanks and line
continuations anywhere, and inside brackets comments too (`(x.cuda  # why\n ())`). One regex with blank gaps finds
the usual spellings; spellings with comments are looked for only in a text where a comment is followed by a token
that one of these searches continues with, which few real files hold.

Comments are told by their `#` alone, without tokenizing: a `#` inside a string, followed on its line by a token
sequence that is itself split by a comment, can hide that sequence from these searches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import ClassVar

BLANK = r"[\s\\]"  # blanks and line continuations (a backslash counts wherever it stands: a superset)


@functools.cache
def _code_gap(blank: str) -> re.Pattern[str]:
    """`blank`s and whole comments: what may stand between two tokens of an expression spread over lines.
    Possessive: a comment is skipped whole or not at all, and nothing is tried twice."""
    return re.compile(rf"(?:{blank}|#[^\r\n]*[\r\n])*+")


@functools.cache
def _gap_then(blank: str, token: str) -> re.Pattern[str]:
    # Not possessive: the gap gives back a character the token may start with (`(` where parentheses may stand
    # between the tokens, as in `device=(0)`).
    return re.compile(rf"(?:{blank}|#[^\r\n]*[\r\n])*(?:{token})")


def spans_across_gaps(text: str, first: re.Pattern[str], *then: str, blank: str = BLANK) -> Iterator[tuple[int, int]]:
    """(start, end) of each match of `first` that the tokens `then` (regexes) follow in turn, each after a gap of
    `blank`s and comments (`x)  # note` and `.to(` on the next line). A failed attempt resumes past the gap where it
    stopped: what it skipped was gaps, where any `first` is in a comment. (One regex holding the gaps would retry
    from every `first` inside a long comment block, in time growing with the square of its lines.)"""
    gap, steps = _code_gap(blank), [_gap_then(blank, token) for token in then]
    position = 0
    while (match := first.search(text, position)) is not None:
        end = match.end()
        for step in steps:
            taken = step.match(text, end)
            if taken is None:
                end = gap.match(text, end).end()
                break
            end = taken.end()
        else:
            yield match.start(), end
        position = max(end, match.start() + 1)


class TokensApart:
    """A sequence of tokens (regexes) with blanks, line continuations and, inside brackets, comments between them:
    `TokensApart(r"\\.", "cuda", r"\\(")` finds `.cuda(`, `. cuda (`, `.\\<newline>cuda(` and `.cuda  # c<newline>(`.
    `gap` adds characters that may stand between the tokens too (`(` in `device=(0)`).

    Every token after the first is one a comment may be followed by. The tokens of all instances make the one scan
    that says which of them follow a comment in a text (made once per text, where a search needs it): only matches
    that continue after a comment with one of those are looked for."""

    _tails: ClassVar[list[str]] = []  # every instance's tokens after the first, as the gate looks for them
    _gate: ClassVar[_CommentGate | None] = None

    def __init__(self, *tokens: str, gap: str = "") -> None:
        self.tokens, self.gap = tokens, gap
        self._blank = blank = rf"[\s\\{re.escape(gap)}]" if gap else BLANK
        grouped = [f"(?:{token})" for token in tokens]  # a token may be an alternation (`\(|as\b`)
        self._together = re.compile(f"{blank}*".join(grouped))
        self._first_word = tokens[0] if tokens[0].isidentifier() else None  # a text without it holds no match
        tails = [TokensApart._registered(rf"{blank}*{token}" if gap else token) for token in grouped[1:]]
        # The first gap that holds a comment may be any of them: tokens up to it without comments, then a comment
        # ahead, then the rest across gaps of any kind, of which one follows the last comment.
        self._across = [(re.compile(f"{blank}*".join(grouped[:count]) + rf"(?={blank}*#)"), tokens[count:],
                         frozenset(tails[count - 1:])) for count in range(1, len(tokens))]

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """(start, end) of the matches: those without comments between the tokens, then those with comments (some
        of those without, too)."""
        for match in self._together.finditer(text):
            yield match.span()
        for first, then in self._searches_across_comments(text):
            yield from spans_across_gaps(text, first, *then, blank=self._blank)

    def search(self, text: str) -> bool:
        # Asked of most files by several text tests: one regex search where that answers.
        return self._together.search(text) is not None or any(
            next(spans_across_gaps(text, first, *then, blank=self._blank), None) is not None
            for first, then in self._searches_across_comments(text))

    def _searches_across_comments(self, text: str) -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
        """(first, then) of the searches `spans_across_gaps` makes for matches with comments in `text`: those whose
        tokens after the first comment may follow a comment there."""
        after_comments = _tails_after_comments(text, TokensApart._comment_gate()) if "#" in text else ()
        if not after_comments or self._first_word is not None and self._first_word not in text:
            return []
        return [(first, then) for first, then, tails in self._across if not tails.isdisjoint(after_comments)]

    @classmethod
    def _registered(cls, tail: str) -> str:
        """`tail`, made one of those the comment gate looks for."""
        if tail not in cls._tails:
            cls._tails.append(tail)
            cls._gate = None
        return tail

    @classmethod
    def _comment_gate(cls) -> _CommentGate:
        if cls._gate is None:
            cls._gate = _CommentGate(cls._tails)
        return cls._gate


class _CommentGate:
    """Which of some tokens (`tails`) follow a comment in a text, after blanks and line continuations."""

    def __init__(self, tails: list[str]) -> None:
        # From a line's last `#` (so a run of them is read once, not once for each) to the line's end, then blank
        # lines, ending where one of the tails starts.
        self.comment_end = re.compile(r"#[^\r\n#]*+[\r\n][\s\\]*+(?=" + "|".join(tails) + ")")
        self.tails = [(tail, re.compile(tail)) for tail in tails]

    def tails_after_comments(self, text: str) -> frozenset[str]:
        return frozenset(tail for end in self.comment_end.finditer(text) for tail, pattern in self.tails
                         if pattern.match(text, end.end()))


@functools.lru_cache(maxsize=2)  # asked by several searches in turn about the same text
def _tails_after_comments(text: str, gate: _CommentGate) -> frozenset[str]:
    return gate.tails_after_comments(text)
