"""`# noqa` comments: the one place that decides whether a finding is reported."""

from __future__ import annotations

import re

from .model import Finding
from .source import LineIndex

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^\s*#\s*h2dlint:\s*noqa\s*$", re.IGNORECASE | re.MULTILINE)


def is_file_exempt(text: str) -> bool:
    return "h2dlint" in text and bool(_FILE_NOQA.search(text))


def suppressed(finding: Finding, line_index: LineIndex) -> bool:
    """True when a `# noqa` on the finding's first or last line covers its code."""
    for line in {finding.start.line, finding.end.line}:
        for match in _NOQA.finditer(line_index.line_text(line)):
            codes = match.group("codes")
            if codes is None or finding.code in re.split(r"[\s,]+", codes.upper()):
                return True
    return False
