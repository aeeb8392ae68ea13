"""Run h2dlint from the current worktree with the worktree's own rule catalogue.

The shared venv's editable install maps `h2dlint.rules` to /work/main/rules, so with cwd = a
worktree `python -m h2dlint` imports the worktree's engine but /work/main's rules.

    cd WORKTREE && /work/main/.venv/bin/python scripts/h2dlint_worktree.py check PATH ...
"""

import importlib.util
import os
import sys

sys.path.insert(0, os.getcwd())
import h2dlint  # noqa: E402

root = os.path.join(os.getcwd(), "rules")
spec = importlib.util.spec_from_file_location("h2dlint.rules", os.path.join(root, "__init__.py"),
                                              submodule_search_locations=[root])
mod = importlib.util.module_from_spec(spec)
sys.modules["h2dlint.rules"] = mod
spec.loader.exec_module(mod)
h2dlint.rules = mod
from h2dlint.cli import run  # noqa: E402

sys.argv = ["h2dlint"] + sys.argv[1:]
run()
