"""`python -m h2dlint.verify.bootstrap SCRIPT ARGS...` or `... -m MODULE ARGS...`.

Runs a program as `python SCRIPT ARGS` (or `python -m MODULE ARGS`) would, with
the import hook installed first, so its modules under the roots named in
H2DLINT_VERIFY_ROOTS are instrumented; the main script or module is instrumented
too. Records go to the file named in H2DLINT_VERIFY_RESULTS at exit.
"""

from __future__ import annotations

import os
import runpy
import sys
import types
from pathlib import Path

from ..source import read_source
from .hook import RESULTS_VARIABLE, ROOTS_VARIABLE, install
from .instrument import PROBE_NAME


def main(argv: list[str]) -> None:
    if not argv or argv == ["-m"]:
        sys.exit("usage: python -m h2dlint.verify.bootstrap (SCRIPT | -m MODULE) [ARGS...]")
    roots = [Path(root) for root in os.environ.get(ROOTS_VARIABLE, os.getcwd()).split(os.pathsep) if root]
    results = os.environ.get(RESULTS_VARIABLE)
    instrumenter = install(roots, Path(results) if results else None)
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]  # runpy puts the module's file name in argv[0]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True,
                         init_globals={PROBE_NAME: instrumenter.recorder.probe})
        return
    script = Path(argv[0])
    sys.argv = argv
    sys.path[0] = str(script.resolve().parent)
    source = read_source(script)
    code = instrumenter.compile(source) if instrumenter.covers(str(script)) else \
        compile(source.text, str(script), "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__file__ = str(script)
    module.__dict__[PROBE_NAME] = instrumenter.recorder.probe
    sys.modules["__main__"] = module
    exec(code, module.__dict__)


if __name__ == "__main__":
    main(sys.argv[1:])
