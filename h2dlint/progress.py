"""A progress bar for long runs, shown only to a person watching a terminal."""

from __future__ import annotations

import contextlib
import os

from rich.console import Console

# Runs over fewer files finish before a bar would tell anyone anything.
PROGRESS_MIN_FILES = 200


def wants_progress(console: Console, file_count: int, environ=os.environ) -> bool:
    """Over PROGRESS_MIN_FILES files, on a terminal, and not in CI (CI=true)."""
    in_ci = environ.get("CI", "").lower() in ("true", "1")
    return file_count > PROGRESS_MIN_FILES and console.is_terminal and not in_ci


@contextlib.contextmanager
def progress_bar(console: Console, file_count: int):
    """Yields a function to call once per file done, or None when no bar is wanted."""
    if not wants_progress(console, file_count):
        yield None
        return
    from rich.progress import (  # only when shown
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("files", total=file_count)
        yield lambda: progress.advance(task)
