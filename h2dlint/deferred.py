"""LibCST, imported where it is first used.

Importing LibCST takes about as long as the rest of a run whose findings all come from the cache (a warm
run, a pre-commit hook on unchanged files, one edited file with nothing to report), and such a run never
parses with it. So the modules that use LibCST at run time (the engine, the rules and their helpers) refer
to it through `libcst` below, which imports the real module at the first attribute asked of it. Type checkers
see the real module: those modules write

    if TYPE_CHECKING:
        import libcst as cst
    else:
        from .deferred import libcst as cst
"""

from __future__ import annotations

import importlib
from typing import Any


class DeferredModule:
    """A module imported at the first attribute asked of it; each attribute is then kept on this object, so that
    later uses cost a plain attribute lookup."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)  # copy, pickle and inspect probe dunders: no reason to import
        module = importlib.import_module(self._name)
        try:
            value = getattr(module, attr)
        except AttributeError:
            value = importlib.import_module(f"{self._name}.{attr}")  # a subpackage: `libcst.metadata`
        setattr(self, attr, value)
        return value


libcst = DeferredModule("libcst")
