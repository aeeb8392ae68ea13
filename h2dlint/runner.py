"""Running the per-file pipeline over many files, in worker processes when it pays."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .cache import FindingsCache
from .engine import FileResult, Known, Linter, process_file
from .model import Finding

# Below this many files, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 24

# Parsing a file allocates millions of objects that die with it (by reference counting). The cyclic
# collector, triggered by those allocations, keeps traversing them for nothing, a large share of a cold
# run. So it is paused while files are processed, and run once every this many files instead. The
# objects alive before the first file (modules, rules) are frozen out of those collections too.
COLLECT_EVERY_FILES = 100

class _PeriodicCollector:
    """With automatic collection disabled: collects once every COLLECT_EVERY_FILES files."""

    def __init__(self) -> None:
        self.files_done = 0

    def file_done(self) -> None:
        self.files_done += 1
        if self.files_done % COLLECT_EVERY_FILES == 0:
            gc.collect()
            # What survives is mostly the caches of the run (the project model's answers, results), alive until
            # it ends: frozen, the next collection traverses only what the files since have left. (A cache that
            # evicted entries holding reference cycles would leave them uncollected until the run ends.)
            gc.freeze()


_worker_linter: Linter | None = None
_worker_collector = _PeriodicCollector()


def _init_worker(linter: Linter) -> None:
    global _worker_linter
    _worker_linter = linter
    gc.disable()
    gc.freeze()


def _work(job: tuple[Path, str, Known | None, bool]) -> FileResult:
    path, mode, known, stamped = job
    result = process_file(path, _worker_linter, mode, known, stamped)
    _worker_collector.file_done()
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # reported as unreadable by its worker


@contextlib.contextmanager
def _collector_paused():
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield _PeriodicCollector()
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def _left_to_do(findings: tuple[Finding, ...], linter: Linter, mode: str) -> bool:
    """Whether `mode` has work left on a file whose findings are known: fixes to apply, or noqa to add."""
    if mode == "add-noqa":
        return bool(findings)
    return mode != "check" and any(linter.applicable(finding.fix) for finding in findings)


def run_files(files: list[Path], linter: Linter, mode: str, jobs: int | None = None,
              cache: FindingsCache | None = None, on_done: Callable[[], None] | None = None) -> list[FileResult]:
    """Process `files`; with a cache, files unchanged since the last run reuse their findings without
    being parsed (when fixing or adding noqa comments, as the findings to start from).
    `on_done` (a progress bar's step) is called as each file is done."""
    step = on_done or (lambda: None)
    results: list[FileResult] = []
    to_process: list[Path] = []
    known: dict[Path, Known] = {}  # cached findings of files processed only to be fixed or given noqa comments
    model_keys = {path: linter.model_key(path, cache.asked(path)) for path in files} if cache is not None else {}
    for path in files:
        cached = cache.lookup(path, model_keys[path]) if cache is not None else None
        if cached is not None and not _left_to_do(cached, linter, mode):
            results.append(FileResult(str(path), cached))
            step()
        else:
            to_process.append(path)
            if cached is not None:
                known[path] = (cache.digest(path), cached)

    jobs = jobs or os.cpu_count() or 1
    if to_process and linter.project is not None:
        linter.project.build(to_process)
    processed: list[FileResult] = []
    if jobs == 1 or len(to_process) < PARALLEL_THRESHOLD:
        with _collector_paused() as collector:
            for path in to_process:
                processed.append(process_file(path, linter, mode, known.get(path), cache is not None))
                step()
                collector.file_done()
    else:
        # The largest files first, in small chunks: no worker is left with a big file while the others idle.
        to_process.sort(key=_size, reverse=True)
        chunksize = max(1, min(16, len(to_process) // (jobs * 16)))
        linter.prepare_visitors()
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(linter,)) as pool:
            work = [(path, mode, known.get(path), cache is not None) for path in to_process]
            for result in pool.map(_work, work, chunksize=chunksize):
                processed.append(result)
                step()
    if cache is not None:
        for path, result in zip(to_process, processed, strict=True):
            if result.stamp is not None and result.error is None:
                if result.journal is not None and linter.project is not None:
                    linter.project.keep_journal(path, result.journal)
                asked = result.asked if result.asked is not None else cache.asked(path)
                cache.store(path, result.stamp[2], result.stamp[0], result.stamp[1], result.findings,
                            linter.model_key(path, asked), asked)
        if linter.project is not None:
            linter.project.save()  # first: it marks the model's cache files used, which the findings cache keeps
        cache.save()
    return sorted(results + processed, key=lambda result: result.path)
