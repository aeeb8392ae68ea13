"""`h2dlint verify [PATHS]`: replaying fixture folders (before.py / after.py with `replay(device, generator)`).

Per case, on CUDA when there is one, else on the CPU:
- equivalence: `before.replay` and `after.replay` on the same seeded inputs, several seeds,
  each called while a long kernel is still queued on the GPU (so a result read before
  its copy finished shows up as different values); without a GPU, also one replay on
  the meta device, where moving a tensor is a real copy (leaf status shows);
- the sites: before.py is loaded instrumented (instrument.py), so at each call h2dlint
  fixes the original and the fixed form run on the same values; on CUDA each is checked
  under `torch.cuda.set_sync_debug_mode("error")` and its host time measured with the GPU
  busy. These checks are scoped to the rewritten calls because a replay's own setup
  (copying its inputs to the device, `repeat_interleave` and the like) synchronizes too.

A case may set `VERIFY_NEEDS_CUDA = "why"` in before.py when its check means nothing
without a GPU; without one it is reported as skipped, with that reason.
"""

from __future__ import annotations

import itertools
import statistics
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..source import read_source
from .instrument import PROBE_NAME, instrument
from .pinning import PinStats, force_pinning_in, pinned_branch_mode
from .runtime import Recorder, all_zeros, differences, gpu_status, sleep_cycles

DEFAULT_SEEDS = (1, 2, 3, 4, 5)


@dataclass
class CaseResult:
    case: str
    path: str
    equal: bool | None = None  # None: not run here
    differences: list[str] = field(default_factory=list)
    sites: int = 0  # calls h2dlint fixes in before.py
    sites_reached: int = 0
    gpu_checked: bool = False
    sync_free: bool | None = None  # the fixed calls, under sync debug mode "error"; None: not checked
    original_caught: bool | None = None  # the original calls raised under it
    host_ms_before: float | None = None  # median host time of one rewritten call, GPU busy
    host_ms_after: float | None = None
    skipped: str | None = None  # why the case did not run here
    pin_requests: int = 0  # without CUDA: pin requests after.py made with its guards forced true
    cuda_crashes: list[str] = field(default_factory=list)  # those that would raise on CUDA

    @property
    def passed(self) -> bool:
        if self.skipped is not None:
            return True
        return bool(self.equal) and not self.cuda_crashes and (not self.gpu_checked or bool(self.sync_free and self.original_caught))

    def to_json(self) -> dict:
        return {**asdict(self), "passed": self.passed}


def find_cases(paths: list[Path]) -> list[Path]:
    """Folders holding before.py and after.py: the paths themselves, or their subfolders."""
    cases = []
    for path in paths:
        if (path / "before.py").is_file() and (path / "after.py").is_file():
            cases.append(path)
        elif path.is_dir():
            cases.extend(sorted(child for child in path.iterdir()
                                if (child / "before.py").is_file() and (child / "after.py").is_file()))
    return cases


def verify_case(folder: Path, seeds=DEFAULT_SEEDS) -> CaseResult:
    result = CaseResult(case=folder.name, path=str(folder))
    cuda, why_not = gpu_status()
    device = "cuda" if cuda else "cpu"
    try:
        before = load_module(folder / "before.py", f"h2dlint_verify_before_{folder.name}")
        # Without CUDA the guard `torch.cuda.is_available()` is false: force it true, so the branch a CUDA
        # machine takes runs here (under PinnedBranch, in _replay).
        after_text = None if cuda else force_pinning_in(read_source(folder / "after.py").text)
        after = load_module(folder / "after.py", f"h2dlint_verify_after_{folder.name}", after_text)
    except Exception as error:
        result.equal = False
        result.differences.append(f"cannot load: {type(error).__name__}: {error}")
        return result
    needs_cuda = getattr(before, "VERIFY_NEEDS_CUDA", None)
    if needs_cuda and not cuda:
        result.skipped = f"needs CUDA ({why_not}): {needs_cuda}"
        return result

    for seed in seeds:
        try:
            expected = _replay(before, device, seed)
        except Exception as error:
            result.differences.append(f"seed {seed}: before.py raised {type(error).__name__}: {error}")
            continue
        if all_zeros(expected):
            result.differences.append(f"seed {seed}: before.py returned only zeros; the comparison proves nothing")
        try:
            actual = _replay(after, device, seed, result)
        except Exception as error:
            if not result.cuda_crashes:
                result.differences.append(f"seed {seed}: after.py raised {type(error).__name__}: {error}")
            continue
        result.differences.extend(f"seed {seed}: {text}" for text in differences(expected, actual))

    if device == "cpu":
        result.differences.extend(_meta_differences(before, after, seeds[0], result))
    # A fix that corrects behaviour on purpose (HDL404 makes the device copy the leaf) names what it
    # changes in before.py; those differences are expected, and its call sites are not replayed twice.
    intended = getattr(before, "VERIFY_INTENDED_CHANGES", ())
    result.differences = [text for text in result.differences
                          if not any(f".{attribute}:" in text for attribute in intended)]
    if not intended:
        _check_sites(folder, device, seeds, result)
    result.equal = not result.differences and not result.cuda_crashes
    return result


def _meta_differences(before, after, seed: int, result: CaseResult) -> list[str]:
    """Without a GPU, `.to("cpu")` is a no-op, so what a real device move does to autograd (a copy is not a
    leaf) stays hidden; a replay on the meta device shows it, with dtype and shape (it has no values)."""
    import torch

    try:
        expected = before.replay("meta", torch.Generator().manual_seed(seed))
    except Exception:
        return []  # before.py itself needs real data (reads values back): the meta replay proves nothing
    try:
        actual = _pinned_branch(lambda: after.replay("meta", torch.Generator().manual_seed(seed)), result)
    except Exception as error:
        return [] if result.cuda_crashes else \
            [f"meta device: after.py raised {type(error).__name__}: {error} (before.py did not)"]
    return [f"meta device: {text}" for text in differences(expected, actual, values=False)]


def _replay(module, device: str, seed: int, result: CaseResult | None = None):
    """`module.replay` on one seed; with `result` (after.py, without CUDA), its pinned branch."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    if device == "cpu":
        if result is not None:
            return _pinned_branch(lambda: module.replay(device, generator), result)
        return module.replay(device, generator)
    torch.cuda.synchronize()
    torch.cuda._sleep(sleep_cycles(torch.device(device, torch.cuda.current_device())))
    value = module.replay(device, generator)
    torch.cuda.synchronize()
    return value


def _pinned_branch(replay, result: CaseResult):
    """Runs `replay` under PinnedBranch, adding its pin requests and CUDA crashes to `result`."""
    stats = PinStats()
    try:
        with pinned_branch_mode(stats):
            return replay()
    finally:
        result.pin_requests += stats.requests
        result.cuda_crashes.extend(str(crash) for crash in stats.crashes if str(crash) not in result.cuda_crashes)


def _check_sites(folder: Path, device: str, seeds, result: CaseResult) -> None:
    import torch

    recorder = Recorder(gpu_hits=len(seeds))  # a sync check and a timing (itself a median) per replay
    ids = itertools.count(1)
    instrumented = instrument(read_source(folder / "before.py"), lambda: next(ids))
    recorder.register(instrumented.sites)
    result.sites = len(instrumented.sites)
    result.differences.extend(f"not instrumented: {why}" for why in instrumented.skipped)
    if not instrumented.sites:
        return
    module = load_module(folder / "before.py", f"h2dlint_verify_sites_{folder.name}",
                         instrumented.text, {PROBE_NAME: recorder.probe})
    for seed in seeds:
        try:
            module.replay(device, torch.Generator().manual_seed(seed))
        except Exception as error:
            result.differences.append(f"seed {seed}: instrumented before.py raised {type(error).__name__}: {error}")
    records = [record for record in recorder.records.values() if record.hits]
    result.sites_reached = len(records)
    for record in records:
        where = f"{Path(record.site.filename).name}:{record.site.row}"
        result.differences.extend(f"{where} (h2dlint's fix): {text}" for text in record.differences + record.errors)
        result.cuda_crashes.extend(f"{where} (h2dlint's fix): {text}" for text in record.cuda_crashes)
    checked = [record for record in records if record.gpu_checked]
    if checked:
        result.gpu_checked = True
        result.sync_free = all(record.sync_free for record in checked)
        result.original_caught = all(record.original_caught for record in checked)
        result.host_ms_before = statistics.median(t for record in checked for t in record.host_ms_original)
        result.host_ms_after = statistics.median(t for record in checked for t in record.host_ms_fixed)


def load_module(path: Path, name: str, text: str | None = None, extra_globals: dict | None = None):
    """A fresh module from `path` (or from `text`, with `path` as its file name), not put in sys.modules."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(extra_globals or {})
    code = compile(read_source(path).text if text is None else text, str(path), "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module
