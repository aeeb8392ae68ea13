"""Running the real linter on code held in a string."""

from __future__ import annotations

import subprocess
from pathlib import Path

from h2dlint.engine import Linter, apply_edits
from h2dlint.rule import all_rules
from h2dlint.settings import Settings
from h2dlint.source import decode_source

# A configuration under which copies are findings wherever they are, not only in code known to run every step:
# for tests of the plumbing on one-line modules (`--config COPIES_ANYWHERE`).
COPIES_ANYWHERE = str(Path(__file__).parent / "copies_anywhere.toml")


def linter_for(*codes: str, **settings) -> Linter:
    rules = all_rules()
    selected = Settings(select=codes or ("ALL",), **settings)
    return Linter([rules[code] for code in selected.enabled_codes(rules)], selected)


def lint(code: str, *codes: str, **settings):
    return linter_for(*codes, **settings).lint(decode_source(code.encode(), Path("example.py")))


def fix(code: str, *codes: str, unsafe: bool = True, **settings) -> str:
    linter = linter_for(*codes, unsafe_fixes=unsafe, **settings)
    source = decode_source(code.encode(), Path("example.py"))
    text, _, _ = linter.fix(source, linter.lint(source))
    return text


def apply_fix(code: str, finding) -> str:
    return apply_edits(code, list(finding.fix.edits))


def git(repo, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def commit_all(repo, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=h2dlint", "-c", "user.email=h2dlint@example.com", "commit", "-q", "-m", message)
