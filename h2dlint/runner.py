"""Running the per-file pipeline over many files, in worker processes when it pays."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .cache import FindingsCache
from .engine import FileResult, Linter, process_file

# Below this many files, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 24

_worker_linter: Linter | None = None


def _init_worker(linter: Linter) -> None:
    global _worker_linter
    _worker_linter = linter


def _work(job: tuple[Path, str]) -> FileResult:
    path, mode = job
    return process_file(path, _worker_linter, mode)


def run_files(files: list[Path], linter: Linter, mode: str, jobs: int | None = None,
              cache: FindingsCache | None = None) -> list[FileResult]:
    """Process `files`; with a cache, files unchanged since the last run (and, when
    fixing, with nothing to fix) reuse their findings without being parsed."""
    results: list[FileResult] = []
    to_process: list[Path] = []
    for path in files:
        cached = cache.lookup(path) if cache is not None else None
        if cached is not None and (mode == "check" or not any(linter.applicable(f.fix) for f in cached)):
            results.append(FileResult(str(path), cached))
        else:
            to_process.append(path)

    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(to_process) < PARALLEL_THRESHOLD:
        processed = [process_file(path, linter, mode) for path in to_process]
    else:
        chunksize = max(1, min(32, len(to_process) // (jobs * 8)))
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(linter,)) as pool:
            processed = list(pool.map(_work, [(path, mode) for path in to_process], chunksize=chunksize))
    if cache is not None:
        for path, result in zip(to_process, processed):
            if result.stamp is not None and result.error is None:
                cache.store(path, result.stamp[2], result.stamp[0], result.stamp[1], result.findings)
        cache.save()
    return sorted(results + processed, key=lambda result: result.path)
