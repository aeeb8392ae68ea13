"""h2dlint as a flake8 plugin: `flake8 --select HDL` reports h2dlint's findings (fixes need `h2dlint --fix`).

Registered in pyproject.toml as `[project.entry-points."flake8.extension"] HDL = "h2dlint.flake8:Plugin"`.
The h2dlint configuration closest to each file applies (its rule options, its
selection), read once per configuration file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from . import __version__
from .config import find_config, resolve_settings
from .engine import Linter
from .rule import all_rules
from .source import SourceFile


@lru_cache(maxsize=32)
def _linter(config: Path | None) -> Linter:
    rules = all_rules()
    settings = resolve_settings([], rules, config)
    return Linter([rules[code] for code in settings.enabled_codes(rules)], settings)


class Plugin:
    name = "h2dlint"
    version = __version__

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self):
        text = "".join(self.lines)
        path = Path(self.filename)
        linter = _linter(find_config(path.parent))
        source = SourceFile(path=path, raw=text.encode("utf-8", errors="surrogatepass"), text=text, encoding="utf-8")
        for finding in linter.lint(source):
            yield finding.start.line, finding.start.column, f"{finding.code} {finding.message}", type(self)
