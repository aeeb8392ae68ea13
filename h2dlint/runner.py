"""Running the per-file pipeline over many files, in worker processes when it pays."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

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
              on_done: Callable[[], None] | None = None) -> list[FileResult]:
    """Process `files`; `on_done` (a progress bar's step) is called as each one finishes."""
    jobs = jobs or os.cpu_count() or 1
    step = on_done or (lambda: None)
    results = []
    if jobs == 1 or len(files) < PARALLEL_THRESHOLD:
        for path in files:
            results.append(process_file(path, linter, mode))
            step()
    else:
        chunksize = max(1, min(32, len(files) // (jobs * 8)))
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(linter,)) as pool:
            for result in pool.map(_work, [(path, mode) for path in files], chunksize=chunksize):
                results.append(result)
                step()
    return sorted(results, key=lambda result: result.path)
