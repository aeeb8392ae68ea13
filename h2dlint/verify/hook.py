"""The import hook that instruments the program's own modules as they are imported.

A sys.meta_path finder hands every pure-Python module under the given roots
(outside site-packages) to a loader that rewrites its source with instrument.py
before compiling it; cached bytecode is never used. At exit the probes' records
go to a JSON file that `h2dlint verify --run` reads.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import itertools
import json
import sys
from pathlib import Path

from ..source import SourceError, SourceFile, read_source
from .instrument import PROBE_NAME, fixing_linter, instrument
from .runtime import Recorder

ROOTS_VARIABLE = "H2DLINT_VERIFY_ROOTS"
RESULTS_VARIABLE = "H2DLINT_VERIFY_RESULTS"
_THIRD_PARTY = {"site-packages", "dist-packages"}


class Instrumenter:
    """Compiles instrumented modules and keeps what the probes record."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [root.resolve() for root in roots]
        self.recorder = Recorder()
        self.linter = fixing_linter()
        self.skipped: list[str] = []
        self._ids = itertools.count(1)
        self._own_package = Path(__file__).resolve().parent.parent

    def covers(self, filename: str) -> bool:
        path = Path(filename).resolve()
        if path.suffix != ".py" or _THIRD_PARTY & set(path.parts) or path.is_relative_to(self._own_package):
            return False
        return any(path.is_relative_to(root) for root in self.roots)

    def compile(self, source: SourceFile):
        try:
            result = instrument(source, lambda: next(self._ids), self.linter)
        except Exception as error:  # an h2dlint bug: run the module as it is
            self.skipped.append(f"{source.path}: internal error {type(error).__name__}: {error}; not instrumented")
            return compile(source.text, str(source.path), "exec", dont_inherit=True)
        self.recorder.register(result.sites)
        self.skipped.extend(result.skipped)
        return compile(result.text, str(source.path), "exec", dont_inherit=True)

    def results(self) -> dict:
        gpu_available, gpu_reason = self.recorder.gpu or (False, "no instrumented site ran")
        return {
            "sites": [record.to_json() for record in self.recorder.records.values()],
            "skipped": self.skipped,
            "gpu": {"available": gpu_available, "reason": gpu_reason},
        }


class InstrumentingFinder(importlib.abc.MetaPathFinder):
    def __init__(self, instrumenter: Instrumenter) -> None:
        self.instrumenter = instrumenter

    def find_spec(self, fullname, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader \
                or not self.instrumenter.covers(spec.origin):
            return None
        spec.loader = InstrumentingLoader(fullname, spec.origin, self.instrumenter)
        return spec


class InstrumentingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, instrumenter: Instrumenter) -> None:
        super().__init__(fullname, path)
        self.instrumenter = instrumenter

    def get_code(self, fullname):
        try:
            source = read_source(Path(self.path))
        except SourceError as error:
            raise ImportError(str(error), name=fullname, path=self.path) from error
        return self.instrumenter.compile(source)

    def exec_module(self, module) -> None:
        module.__dict__[PROBE_NAME] = self.instrumenter.recorder.probe
        super().exec_module(module)


def install(roots: list[Path], results_path: Path | None) -> Instrumenter:
    instrumenter = Instrumenter(roots)
    sys.meta_path.insert(0, InstrumentingFinder(instrumenter))
    if results_path is not None:
        atexit.register(_write_results, instrumenter, results_path)
    return instrumenter


def _write_results(instrumenter: Instrumenter, results_path: Path) -> None:
    results_path.write_text(json.dumps(instrumenter.results(), indent=2))
