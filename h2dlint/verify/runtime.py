"""What runs next to the program: comparing results, the GPU checks, and the probe at each site.

torch is imported inside the functions: this module is loaded into programs that
import torch themselves, and by `h2dlint verify`, never by the linter.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from .instrument import Site
from .pinning import PinStats, pinned_branch_mode

SYNC_ERROR = "called a synchronizing CUDA operation"  # torch's message under set_sync_debug_mode("error")
SLEEP_TARGET_MS = 30.0  # how long the kernel queued ahead of a timed call keeps the GPU busy
MAX_NOTES = 5


def gpu_status() -> tuple[bool, str]:
    """(CUDA usable, why not) for the torch in this process."""
    import torch

    if torch.version.cuda is None:
        return False, f"torch {torch.__version__} was built without CUDA"
    if not torch.cuda.is_available():
        return False, "no CUDA device is visible"
    return True, ""


def differences(expected, actual, where: str = "result", values: bool = True) -> list[str]:
    """How `actual` differs from `expected`: values (unless `values` is false), dtype, device, shape,
    requires_grad, is_leaf."""
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return [f"{where}: {type(actual).__name__} instead of a tensor"]
        found = [f"{where}.{name}: {getattr(expected, name)} became {getattr(actual, name)}"
                 for name in ("dtype", "device", "shape", "requires_grad", "is_leaf")
                 if getattr(expected, name) != getattr(actual, name)]
        if values and expected.shape == actual.shape and not _same_values(expected, actual):
            found.append(f"{where}: values differ")
        return found
    if isinstance(expected, (tuple, list)):
        if type(expected) is not type(actual) or len(expected) != len(actual):
            return [f"{where}: {type(expected).__name__} of {len(expected)} became {_describe(actual)}"]
        return [difference for index, (want, got) in enumerate(zip(expected, actual, strict=True))
                for difference in differences(want, got, f"{where}[{index}]", values)]
    if type(expected).__module__ == "numpy" and type(actual) is type(expected):  # `==` is elementwise there
        same = expected.shape == actual.shape and (expected == actual).all()
        return [] if same else [f"{where}: values differ"]
    return [] if expected == actual else [f"{where}: {expected!r} became {actual!r}"]


def _describe(value) -> str:
    return f"{type(value).__name__} of {len(value)}" if isinstance(value, (tuple, list)) else type(value).__name__


def _same_values(expected, actual) -> bool:
    import torch

    want, got = expected.detach(), actual.detach()
    if want.device != got.device:
        want, got = want.cpu(), got.cpu()
    if want.dtype != got.dtype:
        return torch.equal(want.double(), got.double()) if not want.is_complex() else False
    if want.is_floating_point() or want.is_complex():
        return torch.equal(want.isnan(), got.isnan()) and torch.equal(want.nan_to_num(0.0), got.nan_to_num(0.0))
    return torch.equal(want, got)


def all_zeros(value) -> bool:
    """True when every tensor in `value` is all zeros (a comparison of such results proves little)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() == 0 or not bool(value.detach().ne(0).any())
    if isinstance(value, (tuple, list)):
        return all(all_zeros(item) for item in value)
    return False


def on_cuda(value) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return value.is_cuda
    return isinstance(value, (tuple, list)) and any(on_cuda(item) for item in value)


def _cuda_device(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.device if value.is_cuda else None
    if isinstance(value, (tuple, list)):
        return next((device for device in map(_cuda_device, value) if device is not None), None)
    return None


def raises_sync_error(function, *values) -> bool:
    """Whether `function(*values)` makes a synchronizing CUDA call, seen by torch's sync debug mode."""
    import torch

    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        function(*values)
    except RuntimeError as error:
        if SYNC_ERROR in str(error):
            return True
        raise
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    return False


_sleep_cycles: dict = {}


def sleep_cycles(device) -> int:
    """How many `torch.cuda._sleep` cycles keep `device` busy for about SLEEP_TARGET_MS."""
    import torch

    if device not in _sleep_cycles:
        with torch.cuda.device(device):
            torch.cuda._sleep(1000)  # loads the kernel
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            probe_cycles = 10_000_000
            start.record()
            torch.cuda._sleep(probe_cycles)
            end.record()
            end.synchronize()
            _sleep_cycles[device] = int(probe_cycles * SLEEP_TARGET_MS / max(start.elapsed_time(end), 1e-3))
    return _sleep_cycles[device]


def host_ms_with_busy_gpu(function, values, device, repeats: int = 5) -> float:
    """Median host time of `function(*values)` called while a long kernel is still queued on `device`.

    A blocking copy waits for that kernel; an asynchronous one only enqueues its work.
    """
    import torch

    cycles = sleep_cycles(device)
    times = []
    with torch.cuda.device(device):
        function(*values)  # warm-up: caching allocators, kernels
        torch.cuda.synchronize()
        for _ in range(repeats):
            torch.cuda._sleep(cycles)
            start = time.perf_counter()
            function(*values)
            times.append((time.perf_counter() - start) * 1000)
            torch.cuda.synchronize()
    return statistics.median(times)


@dataclass
class SiteRecord:
    site: Site
    hits: int = 0
    compared: int = 0  # hits where both forms ran and were compared
    differences: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the fixed form (or a check) raised
    gpu_checked: bool = False
    sync_free: bool | None = None  # None: not checked on a GPU
    original_caught: bool | None = None
    host_ms_original: list[float] = field(default_factory=list)
    host_ms_fixed: list[float] = field(default_factory=list)
    pinned_branch_runs: int = 0  # hits whose fixed form made a pin request (its guard forced true without CUDA)
    cuda_crashes: list[str] = field(default_factory=list)  # pin requests that would raise on CUDA

    @property
    def equal(self) -> bool:
        return self.compared > 0 and not self.differences and not self.errors and not self.cuda_crashes

    @property
    def passed(self) -> bool:
        return self.equal and (not self.gpu_checked or bool(self.sync_free))

    def note(self, notes: list[str], text: str) -> None:
        if text not in notes and len(notes) < MAX_NOTES:
            notes.append(text)

    def to_json(self) -> dict:
        saved = None
        if self.host_ms_original and self.host_ms_fixed:
            saved = statistics.median(self.host_ms_original) - statistics.median(self.host_ms_fixed)
        return {
            "filename": self.site.filename, "row": self.site.row, "column": self.site.column,
            "code": self.site.code, "message": self.site.message, "hits": self.hits, "compared": self.compared,
            "equal": self.equal, "differences": self.differences, "errors": self.errors,
            "gpu_checked": self.gpu_checked, "sync_free": self.sync_free, "original_caught": self.original_caught,
            "host_ms_original": statistics.median(self.host_ms_original) if self.host_ms_original else None,
            "host_ms_fixed": statistics.median(self.host_ms_fixed) if self.host_ms_fixed else None,
            "host_ms_saved": saved, "pinned_branch_runs": self.pinned_branch_runs, "cuda_crashes": self.cuda_crashes,
        }


def run_pinned_branch(record: SiteRecord, pinned, values) -> tuple[object, bool]:
    """Runs the fixed form's pinned branch without CUDA (pinning.py); (its result, whether it raised)."""
    stats = PinStats()
    try:
        with pinned_branch_mode(stats):
            return pinned(*values), False
    except Exception as error:
        if not stats.crashes:
            record.note(record.errors, f"the fixed form raised {type(error).__name__}: {error}")
        return None, True
    finally:
        record.pinned_branch_runs += stats.requests > 0
        for crash in stats.crashes:
            record.note(record.cuda_crashes, str(crash))


class Recorder:
    """Holds the instrumented sites and what their probes saw."""

    def __init__(self, compare_hits: int = 20, gpu_hits: int = 3) -> None:
        self.compare_hits = compare_hits  # hits after these are only counted, to bound the overhead
        self.gpu_hits = gpu_hits  # hits that also get the sync check and the timing
        self.records: dict[int, SiteRecord] = {}
        self.gpu: tuple[bool, str] | None = None  # set by the first probe that runs

    def register(self, sites: list[Site]) -> None:
        for site in sites:
            self.records[site.id] = SiteRecord(site)

    def probe(self, site_id: int, original, fixed, pinned, *values):
        """Called by instrumented code: runs both forms on `values`, returns the original's result."""
        record = self.records[site_id]
        record.hits += 1
        result = original(*values)  # its exceptions reach the program, as without the verifier
        if record.hits <= self.compare_hits:
            try:
                self._check(record, result, original, fixed, pinned, values)
            except Exception as error:  # a verifier failure must not change the program's behaviour
                record.note(record.errors, f"verifier error: {type(error).__name__}: {error}")
        return result

    def _check(self, record: SiteRecord, result, original, fixed, pinned, values) -> None:
        if self.gpu is None:
            self.gpu = gpu_status()
        cuda, _ = self.gpu
        if cuda:
            try:
                candidate = fixed(*values)
            except Exception as error:
                record.note(record.errors, f"the fixed form raised {type(error).__name__}: {error}")
                return
        else:
            candidate, raised = run_pinned_branch(record, pinned, values)
            if raised:
                return
        record.compared += 1
        for difference in differences(result, candidate):
            record.note(record.differences, difference)
        device = _cuda_device(result) if cuda else None
        if device is None or len(record.host_ms_fixed) >= self.gpu_hits:
            return
        caught = raises_sync_error(original, *values)
        clean = not raises_sync_error(fixed, *values)
        record.gpu_checked = True
        record.original_caught = caught if record.original_caught is None else record.original_caught and caught
        record.sync_free = clean if record.sync_free is None else record.sync_free and clean
        record.host_ms_original.append(host_ms_with_busy_gpu(original, values, device))
        record.host_ms_fixed.append(host_ms_with_busy_gpu(fixed, values, device))
