"""The project model: facts that cross files (where a tensor lives, which code runs every step), through the CLI."""

from __future__ import annotations

import ast
import json
import marshal
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from h2dlint import project
from h2dlint.cli import main
from h2dlint.config import resolve_settings
from h2dlint.project import module_name_for, summarize
from h2dlint.rule import all_rules

BATCH = '''\
import torch
from dataclasses import dataclass


@dataclass
class ForwardBatch:
    seq_lens: torch.Tensor = None
    seq_lens_cpu: torch.Tensor = None
'''

BACKEND = '''\
from pkg.batch import ForwardBatch


class Backend:
    def plan(self, forward_batch: ForwardBatch):
        return forward_batch.seq_lens.max().item()

    def plan_later(self, forward_batch: ForwardBatch):
        return self.plan(forward_batch)

    def warm_up(self, forward_batch: ForwardBatch):
        return forward_batch.seq_lens.tolist()
'''

RUNNER = '''\
import torch
from pkg.backend import Backend


class ModelRunner(torch.nn.Module):
    def __init__(self, batch):
        self.backend = Backend()
        self.backend.warm_up(batch)

    def forward(self, batch):
        return self.backend.plan_later(batch)
'''


COPIES_ANYWHERE_PYPROJECT = "[tool.h2dlint]\ncopies-outside-hot-code = true\n"


def make_project(root: Path, copies_anywhere: bool = False, **files: str) -> Path:
    """`copies_anywhere`: copies are findings outside code known to be hot too (`copies-outside-hot-code`), for
    the tests of what runs once or never, which only matters there."""
    (root / "pyproject.toml").write_text(COPIES_ANYWHERE_PYPROJECT if copies_anywhere else "")
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in files.items():
        (package / f"{name}.py").write_text(text)
    return package


def check(root: Path, *args: str, cache: bool = False, monkeypatch=None) -> list[dict]:
    options = ["check", str(root / "pkg"), "--output-format", "json", "--exit-zero", *args]
    if not cache:
        options.append("--no-cache")
    result = CliRunner().invoke(main, options, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_file(findings: list[dict]) -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {}
    for finding in findings:
        found.setdefault(Path(finding["filename"]).name, []).append((finding["location"]["row"], finding["code"]))
    return found


def test_a_read_in_another_files_hot_path_of_a_tensor_placed_in_a_third_file_is_reported(tmp_path):
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    findings = check(tmp_path)
    assert by_file(findings) == {"backend.py": [(6, "HDL201")]}
    message = findings[0]["message"]
    # the shortest chain of calls from the root, and where the model placed the tensor
    assert "hot: ModelRunner.forward -> Backend.plan_later -> Backend.plan" in message
    assert "`ForwardBatch.seq_lens` (pkg.batch) has a host mirror `seq_lens_cpu`" in message


def test_without_the_project_model_the_same_read_goes_unreported(tmp_path):
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    (tmp_path / "pyproject.toml").write_text("[tool.h2dlint]\nproject-model = false\n")
    assert check(tmp_path) == []


def test_code_called_only_from_a_constructor_is_not_hot(tmp_path):
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    lines = [line for line, _ in by_file(check(tmp_path)).get("backend.py", [])]
    assert 12 not in lines  # warm_up's `.tolist()`: called from ModelRunner.__init__ only


def test_hotness_flows_into_functions_named_for_building_but_not_for_loading(tmp_path):
    # An inference engine builds every step's metadata (`_build_attention_metadata`, a builder's `build`); loading
    # from a checkpoint stays set-up even when per-step code calls it.
    runner = RUNNER.replace("        return self.backend.plan_later(batch)\n",
                            "        self._build_metadata(batch)\n        self._load_pages(batch)\n\n"
                            "    def _build_metadata(self, batch):\n        return batch.seq_lens.tolist()\n\n"
                            "    def _load_pages(self, batch):\n        return batch.seq_lens.tolist()\n")
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=runner)
    runner_findings = [finding for finding in check(tmp_path) if finding["filename"].endswith("runner.py")]
    assert [(finding["location"]["row"], finding["code"]) for finding in runner_findings] == [(15, "HDL201")]
    assert "hot: ModelRunner.forward -> ModelRunner._build_metadata" in runner_findings[0]["message"]


SELF_FED = """\
import torch


def smooth(model, batches):
    h = model(batches[0])
    for batch in batches:
        h = torch.as_tensor(h.mean(0))
    return h.cuda()


def upload(ids, n):
    for _ in range(n):
        yield torch.tensor(ids).cuda()
"""


def test_a_tensor_made_from_itself_in_a_loop_ends_the_cycle(tmp_path):
    # Whether `h.mean(0)` is a tensor asks where `h` is, which is `torch.as_tensor` of it again: a cycle that must
    # end (it once raised RecursionError and lost the file's findings).
    make_project(tmp_path, smooth=SELF_FED)
    assert by_file(check(tmp_path)) == {"smooth.py": [(13, "HDL102")]}


DEVICE_PROPERTY = """\
import torch


class LM:
    @property
    def device(self):
        return "cpu"

    def score(self, requests):
        for tokens in requests:
            yield torch.tensor(tokens, device=self.device)
"""


@pytest.mark.parametrize("subclass, reported", [
    ("", False),
    ("\n\nclass CudaLM(LM):\n    @property\n    def device(self):\n        return 'cuda'\n", True),
    ("\n\nclass CudaLM(LM):\n    def __init__(self):\n        self.device = torch.device('cuda')\n", True),
])
def test_a_device_property_places_tensors_unless_a_subclass_sets_the_device(tmp_path, subclass, reported):
    make_project(tmp_path, lm=DEVICE_PROPERTY + subclass)
    assert bool(check(tmp_path)) is reported


def test_a_device_assigned_none_is_a_placeholder_not_the_host(tmp_path):
    runner = DEVICE_PROPERTY.replace("    @property\n    def device(self):\n        return \"cpu\"\n",
                                     "    def __init__(self):\n        self.device = None\n")
    make_project(tmp_path, lm=runner,
                 use="from pkg.lm import LM\n\nlm = LM()\nlm.device = 'cuda:0'\nscores = list(lm.score([[1]]))\n")
    assert [finding["code"] for finding in check(tmp_path)] == ["HDL101"]


CONFIG = '''\
from dataclasses import dataclass


@dataclass
class ParallelConfig:
    rank: int = 0
    world_size: int = 1
'''

ALL_REDUCE = '''\
import torch
import torch.distributed as dist
from pkg.config import ParallelConfig


def exchange(count: int, ready: bool, config: ParallelConfig):
    rank = config.rank
    tensor = torch.zeros(2, config.world_size, dtype=torch.int32, device="cuda")
    tensor[0][rank] = count
    tensor[1][rank] = 1 if ready else 0
    dist.all_reduce(tensor)
    return tensor


class Runner:
    def execute_model(self, count, config):
        return exchange(count, True, config)
'''


def test_a_config_field_annotated_int_in_another_file_is_a_python_int_index(tmp_path, monkeypatch):
    # `config.rank` picks one element because ParallelConfig (config.py) annotates it `int`; without that, a name
    # used as an index might be a slice or a mask, and the element writes go unreported.
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, config=CONFIG, dp=ALL_REDUCE)
    findings = check(tmp_path, cache=True)
    assert by_file(findings) == {"dp.py": [(9, "HDL106"), (10, "HDL106")]}
    assert "hot: Runner.execute_model -> exchange" in findings[0]["message"]
    # dp.py is unchanged; the field's annotation changes in config.py.
    (tmp_path / "pkg" / "config.py").write_text(CONFIG.replace("    rank: int = 0\n", "    rank: slice = slice(0, 1)\n"))
    assert check(tmp_path, cache=True) == []


SAMPLING_PARAMS = '''\
class SamplingParams:
    top_p: float = 1.0
'''

INPUT_BATCH = '''\
from dataclasses import dataclass
from typing import Optional

import torch
from pkg.params import SamplingParams


@dataclass
class RequestState:
    req_id: str
    sampling_params: Optional[SamplingParams]


class InputBatch:
    def __init__(self, device):
        self.top_p = torch.empty((8,), device=device)
        self.top_p_cpu = torch.empty((8,), device="cpu", pin_memory=True)
        self.top_p_reqs = set()

    def add_request(self, request: RequestState):
        params = request.sampling_params
        if params.top_p < 1:
            self.top_p_reqs.add(request.req_id)

    def add_forward_declared(self, request: "RequestState"):
        if params := request.sampling_params:
            if params.top_p < 1:
                self.top_p_reqs.add(request.req_id)


class Runner:
    def __init__(self):
        self.input_batch = InputBatch("cuda")

    def execute_model(self, requests):
        for request in requests:
            self.input_batch.add_request(request)
            self.input_batch.add_forward_declared(request)
'''


def test_a_field_another_file_annotates_as_a_number_is_no_tensor_beside_a_same_named_gpu_one(tmp_path, monkeypatch):
    # InputBatch's `top_p` is a CUDA tensor with a host mirror, but `params.top_p` is the float field of the
    # request's SamplingParams (params.py), reached through an annotated attribute, a local and a forward reference.
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, params=SAMPLING_PARAMS, batch=INPUT_BATCH)
    assert check(tmp_path, cache=True) == []
    # batch.py is unchanged; the field becomes a tensor in params.py.
    (tmp_path / "pkg" / "params.py").write_text("import torch\n\n\nclass SamplingParams:\n    top_p: torch.Tensor\n")
    assert by_file(check(tmp_path, cache=True)) == {"batch.py": [(22, "HDL203"), (27, "HDL203")]}


@pytest.mark.parametrize(("annotation", "reported"), [
    ("float", False), ("Optional[float]", False), ("'float'", False),
    ("Union[float, torch.Tensor]", True), ("List[int]", True), ("Dict[int, torch.Tensor]", True),
])
def test_only_a_number_annotation_makes_a_field_no_tensor(tmp_path, annotation, reported):
    params = ("from typing import Dict, List, Optional, Union\n\nimport torch\n\n\n"
              f"class Params:\n    temp: {annotation}\n")
    batch = ("import torch\nfrom pkg.params import Params\n\n\nclass Batch:\n    def __init__(self):\n"
             "        self.temp = torch.ones(8, device='cuda')\n        self.temp_cpu = torch.ones(8)\n\n"
             "    def forward(self, params: Params):\n        if params.temp:\n            return 1\n")
    make_project(tmp_path, params=params, batch=batch)
    assert by_file(check(tmp_path)) == ({"batch.py": [(11, "HDL203")]} if reported else {})


def test_a_subclass_assigning_a_tensor_to_a_field_its_base_annotates_as_a_number_holds_a_tensor(tmp_path):
    make_project(tmp_path, base="class Base:\n    scale: float = 1.0\n",
                 model="import torch\nfrom pkg.base import Base\n\n\nclass Scaled(Base):\n    def __init__(self):\n"
                       "        self.scale = torch.ones(1, device='cuda')\n        self.scale_cpu = torch.ones(1)\n\n"
                       "    def forward(self, x, other: Scaled):\n        if other.scale > 0:\n            return x\n")
    assert by_file(check(tmp_path)) == {"model.py": [(11, "HDL203")]}


def test_a_number_field_its_class_sets_from_the_environment_stays_a_number(tmp_path):
    # `self.rank = int(...) // n` is a value the summary cannot place, not a tensor: the `int` annotation stands.
    config = CONFIG.replace("import dataclass\n", "import dataclass\nimport os\n") + (
        "\n    def __post_init__(self):\n        self.rank = int(os.environ.get('RANK', '0')) // self.world_size\n")
    make_project(tmp_path, config=config, dp=ALL_REDUCE)
    assert by_file(check(tmp_path)) == {"dp.py": [(9, "HDL106"), (10, "HDL106")]}


@pytest.mark.parametrize("assigned", [
    "torch.tensor(0.999, device=device)",  # the class's own binding places it
    "decay",  # the model places it: every constructor call passes a CUDA tensor
])
def test_a_field_annotated_as_a_number_but_holding_a_cuda_tensor_is_no_python_number(tmp_path, assigned):
    ema = ("import torch\n\n\nclass EMA:\n    decay: float = 0.999\n\n    def __init__(self, device, decay):\n"
           f"        self.decay = {assigned}\n        self.hist = torch.zeros(10, device='cuda')\n\n"
           "    def forward(self, x, step: int):\n        self.hist[step] = self.decay\n        return x\n\n\n"
           "class Runner:\n    def __init__(self):\n        self.ema = EMA('cuda', torch.ones((), device='cuda'))\n\n"
           "    def execute_model(self, x, step: int):\n        return self.ema.forward(x, step)\n")
    make_project(tmp_path, ema=ema)
    assert check(tmp_path) == []  # a device-to-device element write, no "Python number" (HDL106)


TYPED_BASE = '''\
import torch


class GpuBuf:
    def __init__(self, n):
        self.table = torch.zeros(n, device="cuda")


class HostBuf:
    def __init__(self, n):
        self.table = torch.zeros(n)


class Base:
    buf: GpuBuf
'''

TYPED_RUNNER = '''\
from pkg.base import Base


class Runner(Base):
    def forward(self, x):
        return self.buf.table.tolist()
'''

MODULE_BASE = '''\
from torch import nn


class Base(nn.Module):
    pass
'''

MODULE_RUNNER = '''\
import torch
from pkg.base import Base


class Runner(Base):
    def __init__(self, tables):
        super().__init__()
        self.parts = []
        for table in tables:
            self.parts.append(torch.tensor(table).cuda())
'''

RE_EXPORTED_RUNNER = '''\
import torch
from pkg import ParallelConfig


def forward(config: ParallelConfig):
    flags = torch.zeros(8, device="cuda")
    flags[config.rank] = 1
    return flags
'''


@pytest.mark.parametrize(("files", "other", "changed"), [
    # the type of an attribute another file annotates: `self.buf.table` is a CUDA tensor, then a host one
    ({"base": TYPED_BASE, "runner": TYPED_RUNNER}, "base", ("    buf: GpuBuf\n", "    buf: HostBuf\n")),
    # whether a base class is an `nn.Module` (one object per model: the copy rules stay quiet in its constructor)
    ({"base": MODULE_BASE, "runner": MODULE_RUNNER}, "base", ("class Base(nn.Module):", "class Base(object):")),
    # which class a name re-exported by the package stands for
    ({"__init__": "from pkg.config import ParallelConfig\n", "config": CONFIG,
      "other": CONFIG.replace("rank: int = 0", "rank: slice = slice(0, 1)"), "runner": RE_EXPORTED_RUNNER},
     "__init__", ("pkg.config", "pkg.other")),
])
def test_what_a_file_asks_of_another_files_classes_is_keyed_in_the_cache(tmp_path, monkeypatch, files, other,
                                                                         changed):
    # A cached run after a change to another file finds what a run without the cache finds, whichever of the
    # model's answers changed.
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, **files)
    before = by_file(check(tmp_path, "--select", "ALL", cache=True))
    path = tmp_path / "pkg" / f"{other}.py"
    old, new = changed
    path.write_text(path.read_text().replace(old, new))
    after = by_file(check(tmp_path, "--select", "ALL", cache=True))
    assert after == by_file(check(tmp_path, "--select", "ALL"))
    assert after != before


def test_the_models_cached_answers_are_not_taken_by_a_run_of_other_h2dlint_code(tmp_path, monkeypatch):
    # A development build keeps its version; the model's answers (hotness here) come from its code.
    monkeypatch.chdir(tmp_path)
    runner = RUNNER.replace("        return self.backend.plan_later(batch)\n",
                            "        return self._build_metadata(batch)\n\n"
                            "    def _build_metadata(self, batch):\n        return batch.seq_lens.tolist()\n")
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=runner)
    assert by_file(check(tmp_path, cache=True))["runner.py"] == [(14, "HDL201")]
    # Other code: functions named for building run once, as they did before hotness flowed into them.
    monkeypatch.setattr(project, "NOT_PER_STEP_NAME_WORDS", project.NOT_PER_STEP_NAME_WORDS | {"build"})
    monkeypatch.setattr(project, "code_fingerprint", lambda: "other code")
    assert by_file(check(tmp_path, cache=True)) == by_file(check(tmp_path)) == {}


BUILDERS = '''\
from typing import Generic, TypeVar

import torch

M = TypeVar("M")


class MetadataBuilder(Generic[M]):
    def build(self, lens) -> M:
        raise NotImplementedError


class MambaBuilder(MetadataBuilder[dict]):
    def build(self, lens):
        has_initial = torch.zeros(8, device="cuda") > 0
        return {"prep": bool(torch.any(has_initial).item())}


class AttentionGroup:
    def __init__(self, builders: list[MetadataBuilder]):
        self.metadata_builders = builders

    def get_metadata_builder(self, ubatch_id: int = 0) -> MetadataBuilder:
        return self.metadata_builders[ubatch_id]
'''

GROUP_RUNNER = '''\
from pkg.builders import AttentionGroup


class GPUModelRunner:
    def __init__(self):
        self.attn_groups: list[list[AttentionGroup]] = []

    def execute_model(self, lens):
        return self._build_attention_metadata(lens)

    def _build_attention_metadata(self, lens):
        def build_group(group_id, index):
            attn_group = self.attn_groups[group_id][index]
            builder = attn_group.get_metadata_builder()
            return builder.build(lens)

        return [build_group(0, index) for index in range(2)]
'''


def test_a_call_on_a_local_typed_through_annotations_reaches_every_override(tmp_path):
    # `builder` holds what `AttentionGroup.get_metadata_builder` returns (annotated `MetadataBuilder`), an element
    # of `self.attn_groups` (annotated `list[list[AttentionGroup]]`), read in a helper nested in the hot function;
    # `MambaBuilder` overrides `build` through a generic base (`MetadataBuilder[dict]` is a `MetadataBuilder`).
    make_project(tmp_path, builders=BUILDERS, runner=GROUP_RUNNER)
    findings = check(tmp_path)
    assert by_file(findings) == {"builders.py": [(16, "HDL201")]}
    assert "hot: GPUModelRunner.execute_model -> GPUModelRunner._build_attention_metadata -> MambaBuilder.build" \
        in findings[0]["message"]
    # Without the annotation on the method's result, what `builder` holds is unknown: `build` is not reached.
    (tmp_path / "pkg" / "builders.py").write_text(BUILDERS.replace("ubatch_id: int = 0) -> MetadataBuilder:",
                                                                   "ubatch_id: int = 0):"))
    assert check(tmp_path) == []


def test_a_change_to_a_class_in_one_file_changes_findings_in_another_with_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    assert by_file(check(tmp_path, cache=True)) == {"backend.py": [(6, "HDL201")]}
    # The host mirror goes away: nothing says any more that seq_lens is on the GPU. backend.py is unchanged.
    (tmp_path / "pkg" / "batch.py").write_text(BATCH.replace("    seq_lens_cpu: torch.Tensor = None\n", ""))
    assert check(tmp_path, cache=True) == []
    # And back, now with the placement written where the tensor is made.
    (tmp_path / "pkg" / "batch.py").write_text(
        BATCH.replace("    seq_lens_cpu: torch.Tensor = None\n", "")
        + "\n    def prepare(self, lens):\n        self.seq_lens = torch.tensor(lens, device='cuda')\n")
    findings = check(tmp_path, "--select", "HDL201", cache=True)
    assert by_file(findings) == {"backend.py": [(6, "HDL201")]}
    assert "made with `tensor(..., device='cuda')`" in findings[0]["message"]


def test_a_change_to_the_calls_in_one_file_changes_hotness_in_another_with_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    assert by_file(check(tmp_path, cache=True)) == {"backend.py": [(6, "HDL201")]}
    (tmp_path / "pkg" / "runner.py").write_text(RUNNER.replace("return self.backend.plan_later(batch)",
                                                               "return batch"))
    assert check(tmp_path, cache=True) == []


def test_an_edit_that_changes_no_summary_is_checked_from_the_journal_without_building_the_model(tmp_path,
                                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    before = check(tmp_path, cache=True)
    assert by_file(before) == {"backend.py": [(6, "HDL201")]}
    # A call added elsewhere changes the model, which is built again; backend.py is not linted then, but what the
    # last run asked about it is asked of the new model, so that its next edit needs no model either.
    (tmp_path / "pkg" / "runner.py").write_text(RUNNER + "\nprint()\n")
    assert check(tmp_path, cache=True) == before

    def no_model(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(project, "build_model", no_model)
    # An edit that moves code but changes no call, class, import or value leaves the model as the last run's: the
    # file's rules are answered from what its view asked then (the placement in batch.py, the chain from runner.py).
    (tmp_path / "pkg" / "backend.py").write_text("# planning\n" + BACKEND)
    after = check(tmp_path, cache=True)
    assert by_file(after) == {"backend.py": [(7, "HDL201")]}
    assert after[0]["message"] == before[0]["message"] and after[0]["evidence"] == before[0]["evidence"]
    # And again, a docstring added to the method: the journal kept by that run serves the next.
    (tmp_path / "pkg" / "backend.py").write_text("# planning\n" + BACKEND.replace(
        "        return forward_batch.seq_lens.max().item()",
        "        \"\"\"The longest sequence.\"\"\"\n        return forward_batch.seq_lens.max().item()"))
    assert by_file(check(tmp_path, cache=True)) == {"backend.py": [(8, "HDL201")]}


def test_a_cached_run_after_renames_and_reorders_finds_what_a_run_without_cache_finds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    helper = 'import torch\n\n\ndef helper(data):\n    return torch.tensor(data, device="cuda")\n\n\n' \
             'def prepare(data):\n    return helper(data)\n'
    holders = ("import torch\n\n\nclass DecodeState:\n    def __init__(self, n):\n"
               "        self.req_pool_indices = torch.zeros(n, device='cuda')\n\n\n"
               "class ExtendState:\n    def __init__(self, n):\n"
               "        self.req_pool_indices = torch.empty(n, device='cuda')\n")
    reader = ("import torch\n\n\nclass Worker(torch.nn.Module):\n    def forward(self, state):\n"
              "        return state.req_pool_indices.max().item()\n")
    make_project(tmp_path, helper=helper, holders=holders, reader=reader, batch=BATCH, backend=BACKEND, runner=RUNNER)
    package = tmp_path / "pkg"

    def same_as_without_cache():
        assert check(tmp_path, cache=True) == check(tmp_path)

    same_as_without_cache()
    # What the copy rules asked of `helper` (whether only run-once code calls it) is kept in the journal; the
    # function then goes away: the question kept must not break the next runs.
    (package / "helper.py").write_text(helper.replace('torch.tensor(data, device="cuda")', "data"))
    same_as_without_cache()
    (package / "helper.py").write_text(helper.replace('torch.tensor(data, device="cuda")', "data")
                                       .replace("helper", "helper2"))
    same_as_without_cache()
    same_as_without_cache()
    # The question about `helper` went with the file's last lint: journals do not keep what no rule asks any more.
    journal_file = next((tmp_path / ".h2dlint_cache").glob("model-*-journal.marshal"))
    _, journals = marshal.loads(journal_file.read_bytes())
    questions = marshal.loads(journals[str(package / "helper.py")])
    assert questions and not any("pkg.helper.helper" in repr(question) for question in questions)
    # Two classes swapped: the same summary but for its order, which the model walks (the message names the
    # first class that places the attribute).
    first, second = holders.split("\n\n\nclass ExtendState")
    (package / "holders.py").write_text(f"import torch\n\n\nclass ExtendState{second}\n\n"
                                        f"{first.replace('import torch', '').lstrip()}")
    same_as_without_cache()
    (package / "reader.py").write_text("# moved\n\n" + reader)
    same_as_without_cache()


def test_a_model_built_after_a_file_changed_does_not_take_the_last_runs_hotness(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    assert by_file(check(tmp_path, cache=True)) == {"backend.py": [(6, "HDL201")]}
    settings = resolve_settings([tmp_path / "pkg"], all_rules())
    files = sorted((tmp_path / "pkg").glob("*.py"))
    later = project.project_model_for([tmp_path / "pkg"], settings, tmp_path / ".h2dlint_cache", 1, found=files)
    assert later.key(files[0]) is not None  # the last run's state is taken: the model is the same so far
    # Then the runner stops calling the backend (as a language server may see, long before it builds the model).
    (tmp_path / "pkg" / "runner.py").write_text(RUNNER.replace("return self.backend.plan_later(batch)",
                                                               "return batch"))
    assert later.model.hot.get("pkg.backend.Backend.plan") is None


def test_a_view_from_a_journal_builds_the_model_only_for_a_question_the_journal_lacks(tmp_path):
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER)
    files = [str(path) for path in (tmp_path / "pkg").glob("*.py")]
    model = project.build_model(files, (), lambda name: "a step" if name == "forward" else None,
                                project_root=tmp_path)
    path = str(tmp_path / "pkg" / "backend.py")
    recorded = model.view(path)
    chain = recorded.hot("Backend.plan")
    assert chain is not None and chain.describe() == "ModelRunner.forward -> Backend.plan_later -> Backend.plan"
    assert ("hot", "Backend.plan") in recorded.journal
    built = []

    def build():
        built.append(True)
        return model

    replayed = project.FileView(None, path, model.summaries[path], dict(recorded.journal), build=build)
    assert replayed.hot("Backend.plan") == chain and not built  # from the journal
    assert replayed.hot("Backend.warm_up") == model.view(path).hot("Backend.warm_up") and built == [True]


def test_hot_functions_configured_are_roots_and_gpu_attributes_are_placed(tmp_path):
    helper = '''\
class Sampler:
    def sample_step(self, state):
        return self.pick(state)

    def pick(self, state):
        return state.logits_buf.argmax().item()
'''
    make_project(tmp_path, sampler=helper)
    assert check(tmp_path) == []
    (tmp_path / "pyproject.toml").write_text(
        '[tool.h2dlint]\nhot-functions = ["sample_step"]\ngpu-attributes = ["logits_buf"]\n')
    findings = check(tmp_path)
    assert by_file(findings) == {"sampler.py": [(6, "HDL201")]}
    assert "hot: Sampler.sample_step -> Sampler.pick" in findings[0]["message"]
    assert "configured in `gpu-attributes`" in findings[0]["message"]


def test_unknown_configuration_keys_are_still_an_error(tmp_path):
    make_project(tmp_path, batch=BATCH)
    (tmp_path / "pyproject.toml").write_text('[tool.h2dlint]\nproject-roots = ["."]\n')
    result = CliRunner().invoke(main, ["check", str(tmp_path / "pkg")])
    assert result.exit_code == 2 and "unknown key `project-roots`" in result.output


def test_module_names_follow_packages_or_configured_source_roots(tmp_path):
    (tmp_path / "src" / "app" / "models").mkdir(parents=True)
    (tmp_path / "src" / "app" / "__init__.py").write_text("")
    (tmp_path / "src" / "app" / "models" / "__init__.py").write_text("")
    module = tmp_path / "src" / "app" / "models" / "llama.py"
    module.write_text("")
    assert module_name_for(module) == "app.models.llama"
    assert module_name_for(module, [tmp_path / "src"]) == "app.models.llama"
    assert module_name_for(tmp_path / "src" / "app" / "models" / "__init__.py") == "app.models"


def test_relative_imports_resolve_against_the_package():
    summary = summarize(ast.parse("from .batch import ForwardBatch\nfrom .. import utils\n"), "pkg.sub.backend")
    assert summary["imports"] == {"ForwardBatch": "pkg.sub.batch.ForwardBatch", "utils": "pkg.utils"}
    package = summarize(ast.parse("from .batch import ForwardBatch\n"), "pkg.sub", is_package=True)
    assert package["imports"] == {"ForwardBatch": "pkg.sub.batch.ForwardBatch"}


@pytest.mark.parametrize("body, reported", [
    ("x = x.cuda()\n    return x.sum().item()", True),  # rebound to its GPU copy: on the GPU afterwards
    ("x = x.cuda().cpu()\n    return x.sum().item()", False),  # rebound to a host copy
    ("if x.dim():\n        x = x.cuda()\n    return x.sum().item()", False),  # rebound on one path only
])
def test_a_name_rebound_in_the_function_body_has_its_new_placement(tmp_path, body, reported):
    make_project(tmp_path, model=f"import torch\n\ndef forward(x):\n    {body}\n")
    last_line = 4 + body.count("\n")
    found = by_file(check(tmp_path, "--select", "HDL201"))
    assert ((last_line, "HDL201") in found.get("model.py", [])) is reported


def test_the_iterable_of_a_for_runs_once_not_once_per_iteration(tmp_path):
    code = ("import torch\n\ndef forward(seqs, lens):\n    for a, n in zip(seqs, lens.cuda().tolist()):\n"
            "        pass\n")
    make_project(tmp_path, model=code)
    findings = check(tmp_path, "--select", "HDL201")
    assert len(findings) == 1 and "(in `forward`)" in findings[0]["message"]
    assert "in a loop" not in findings[0]["message"]


def test_findings_carry_their_evidence_in_json_sarif_and_statistics(tmp_path):
    make_project(tmp_path, batch=BATCH, backend=BACKEND, runner=RUNNER,
                 local="import torch\n\ndef forward(x):\n    return x.cuda().sum().item()\n")
    findings = {Path(finding["filename"]).name: finding for finding in check(tmp_path)}
    assert findings["backend.py"]["evidence"] == {
        "placement": "inferred",
        "placement_source": "`ForwardBatch.seq_lens` (pkg.batch) has a host mirror `seq_lens_cpu`",
        "hot": "ModelRunner.forward -> Backend.plan_later -> Backend.plan"}
    assert findings["local.py"]["evidence"] == {"placement": "proven", "hot": "in `forward`"}
    sarif = json.loads(CliRunner().invoke(main, ["check", str(tmp_path / "pkg"), "--no-cache", "--exit-zero",
                                                 "--output-format", "sarif"]).stdout)
    ranks = {Path(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name:
             (result["rank"], result["properties"]["h2dlint/placement"]) for result in sarif["runs"][0]["results"]}
    assert ranks == {"backend.py": (70.0, "inferred"), "local.py": (90.0, "proven")}
    statistics = json.loads(CliRunner().invoke(main, ["check", str(tmp_path / "pkg"), "--no-cache", "--exit-zero",
                                                      "--statistics", "--output-format", "json"]).stdout)
    assert statistics == [{"code": "HDL201", "name": "gpu-value-read", "count": 2, "fixable": False,
                           "placement": {"proven": 1, "inferred": 1}}]


def test_copy_findings_say_why_their_code_runs_often_when_it_does(tmp_path):
    helper = ("import torch\n\n\ndef upload(ids, device):\n    return torch.tensor(ids, device=device)\n\n\n"
              "def once(ids, device):\n    return torch.tensor(ids, device=device)\n"
              "\n\ndef prepare(ids, device):\n    return once(ids, device)\n")
    runner = ("import torch\nfrom pkg.helper import upload\n\n\nclass Runner(torch.nn.Module):\n"
              "    def forward(self, ids, device):\n        return upload(ids, device)\n\n"
              "    def gather(self, rows, device):\n        for row in rows:\n            yield torch.tensor(row, device=device)\n")
    make_project(tmp_path, helper=helper, runner=runner)
    found = {(Path(finding["filename"]).name, finding["location"]["row"]): finding.get("evidence")
             for finding in check(tmp_path, "--select", "HDL101")}
    assert found == {("helper.py", 5): {"hot": "Runner.forward -> upload"},  # hot through calls
                     ("runner.py", 11): {"hot": "in a loop"}}
    # Nothing shows how often `once` runs: reported only with `copies-outside-hot-code`, with no evidence.
    (tmp_path / "pyproject.toml").write_text(COPIES_ANYWHERE_PYPROJECT)
    found = {(Path(finding["filename"]).name, finding["location"]["row"]): finding.get("evidence")
             for finding in check(tmp_path, "--select", "HDL101")}
    assert found[("helper.py", 9)] is None and len(found) == 3


def test_a_call_through_an_attribute_of_a_known_type_and_super_resolve(tmp_path):
    base = '''\
import torch


class Base(torch.nn.Module):
    def forward(self, x):
        return self.helper(x)

    def helper(self, x):
        return x


class Child(Base):
    def helper(self, x):
        return super().helper(x)
'''
    other = '''\
import torch
from pkg.base import Child


class Holder:
    def __init__(self):
        self.child = Child()

    def step(self, x):
        return self.child.run_child(x)


def run_child(x):
    return torch.nonzero(x)
'''
    make_project(tmp_path, base=base, other=other)
    from h2dlint.project import project_model_for
    from h2dlint.settings import Settings

    model = project_model_for([tmp_path / "pkg"], Settings(), None, 1).model
    chains = {name.rpartition("pkg.")[2]: hot.describe() for name, hot in model.hot.items()}
    # self.helper() reaches the override in the subclass; super().helper() the base's own.
    assert chains["base.Child.helper"] == "Base.forward -> Child.helper"
    assert chains["base.Base.helper"] == "Base.forward -> Base.helper"
    # Holder.step calls a method Child does not have: not the module-level function of the same name.
    assert "other.run_child" not in chains


def test_an_attribute_of_a_typed_attribute_is_placed_by_its_class(tmp_path):
    """`self.input_ids.gpu`: `input_ids` is a buffer class kept on both sides, made in another file."""
    buffer = ("import torch\n\n\nclass CpuGpuBuffer:\n    def __init__(self, n, device):\n"
              "        self.cpu = torch.zeros(n)\n        self.gpu = torch.zeros_like(self.cpu, device=device)\n")
    runner = ("from pkg.buffer import CpuGpuBuffer\n\n\nclass Runner:\n    def __init__(self, device):\n"
              "        self.input_ids = CpuGpuBuffer(8, device)\n\n    def forward(self, n):\n"
              "        return self.input_ids.gpu[:n].max().item(), self.input_ids.cpu[:n].max().item()\n")
    make_project(tmp_path, buffer=buffer, runner=runner)
    findings = check(tmp_path)
    assert by_file(findings) == {"runner.py": [(9, "HDL201")]}
    assert findings[0]["location"]["column"] == 16
    assert "`CpuGpuBuffer.gpu` (pkg.buffer) has a host side `cpu`" in findings[0]["message"]


def test_a_count_of_gpus_beside_a_count_of_cpus_is_no_device_copy(tmp_path):
    # torchx's `Resource(cpu: int, gpu: int)`: numbers of devices a scheduler asks for, not a buffer's two sides.
    specs = ("from dataclasses import dataclass\n\n\n@dataclass\nclass Resource:\n    cpu: int\n    gpu: int\n")
    scheduler = ("from pkg.specs import Resource\n\n\nclass Scheduler:\n    def forward(self, roles: list):\n"
                 "        for role in roles:\n            resource = Resource(cpu=role.cpus, gpu=role.gpus)\n"
                 "            if resource.gpu > 0:\n                role.devices = resource.gpu\n")
    make_project(tmp_path, specs=specs, scheduler=scheduler)
    assert by_file(check(tmp_path)) == {}


def test_a_tree_the_repository_ignores_is_in_the_model_when_checked(tmp_path):
    """A vendored or downloaded tree inside a repository that ignores it: checked on purpose, it is its own
    project's content, so its cross-file facts count."""
    (tmp_path / ".gitignore").write_text("vendored/\n")
    (tmp_path / ".git").mkdir()
    vendored = tmp_path / "vendored"
    vendored.mkdir()
    make_project(vendored, batch=BATCH, backend=BACKEND, runner=RUNNER)
    (vendored / "pyproject.toml").unlink()  # the closest project root is the repository
    findings = check(vendored)
    assert by_file(findings) == {"backend.py": [(6, "HDL201")]}


def test_no_pinned_rewrite_under_a_default_device_context_opened_in_another_file(tmp_path):
    """`with torch.device(dev): Model(...)` in a loader: Model's constructor, in another file, runs under it, where
    `pin_memory=True` raises on CUDA. The copy is still reported, without a rewrite, saying why."""
    model = ("import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, sizes, device):\n"
             "        super().__init__()\n        self.build(sizes, device)\n\n"
             "    def build(self, sizes, device):\n        self.offsets = torch.tensor(sizes, device=device)\n\n"
             "    def forward(self, sizes, device):\n        self.build(sizes, device)\n")
    loader = ("import torch\nfrom pkg.model import Model\n\n\ndef make(sizes, device):\n"
              "    with torch.device(device):\n        return Model(sizes, device)\n")
    make_project(tmp_path, model=model)
    alone = check(tmp_path, "--unsafe-fixes")
    assert [finding["fix"] is not None for finding in alone] == [True]
    (tmp_path / "pkg" / "loader.py").write_text(loader)
    findings = check(tmp_path, "--unsafe-fixes")
    assert [(Path(f["filename"]).name, f["code"], f["fix"]) for f in findings] == [("model.py", "HDL101", None)]
    assert "under `with torch.device(...)` in `make`" in findings[0]["message"]


def test_an_identity_test_of_a_cuda_tensor_is_a_python_bool(tmp_path):
    """From the held-out vLLM check: `direct = masks is None` then `if direct:` is no tensor condition."""
    code = ("import torch\n\n\ndef forward(x):\n    masks = x.cuda()\n    direct = masks is None\n    if direct:\n"
            "        return 0\n    if masks.any():\n        return 1\n")
    make_project(tmp_path, model=code)
    assert [(finding["location"]["row"], finding["code"]) for finding in check(tmp_path)] == [(9, "HDL203")]


def test_fix_leaves_nothing_for_git_to_see_but_the_fix(tmp_path, monkeypatch):
    """`--fix` stores no findings (the file changed), but the project model's summaries are cached: the cache
    folder they are written to is ignored by git all the same, as pre-commit's fix hook needs."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "model.py").write_text("import torch\nx = torch.tensor([1, 2], device='cuda')\n")
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(main, ["check", "--fix", "model.py"], catch_exceptions=False)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert status.splitlines() == ["?? model.py"]
    assert (tmp_path / ".h2dlint_cache" / ".gitignore").read_text() == "*\n"


def test_shapes_of_unknown_placement_need_a_function_hot_by_name(tmp_path):
    """`nonzero` of a tensor whose device no one knows: reported in `forward`, not in a helper that is hot only
    because `forward` calls it (there it was often a host tensor)."""
    code = ("import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, mask):\n"
            "        self.helper(mask)\n        return mask.nonzero()\n\n"
            "    def helper(self, mask):\n        return mask.nonzero()\n")
    make_project(tmp_path, model=code)
    assert [(finding["location"]["row"], finding["code"]) for finding in check(tmp_path)] == [(7, "HDL301")]


# Values followed across calls: a device made in one class reaches another's constructor, a buffer made on it is
# passed to a helper in a third file, and a helper returns what it is given.
STATE = '''\
import torch


class PenaltiesState:
    def __init__(self, n, device):
        self.device = device
        self.bin_mask = torch.zeros(n, device=self.device)

    def apply_staged_writes(self, index):
        return bincount(self.bin_mask, index)


def bincount(mask, index):
    return mask[index].sum().item()
'''

WORKER = '''\
import torch

from pkg.state import PenaltiesState


class Worker:
    def __init__(self, local_rank):
        self.device = torch.device(f"cuda:{local_rank}")
        self.state = PenaltiesState(4, self.device)

    def _pad(self, tensor):
        return torch.cat([tensor, tensor])

    def forward_batch_generation(self, index):
        self.state.apply_staged_writes(index)
        lens = self._pad(self.state.bin_mask)
        if self.device != lens.device:
            return None
        return lens.max().item()
'''


def test_placement_follows_arguments_into_parameters_and_results_out_of_calls(tmp_path):
    make_project(tmp_path, state=STATE, worker=WORKER)
    findings = check(tmp_path)
    assert by_file(findings) == {"state.py": [(14, "HDL201")], "worker.py": [(19, "HDL201")]}
    messages = {Path(finding["filename"]).name: finding["message"] for finding in findings}
    # bincount is hot through two calls, and its `mask` parameter is the buffer every caller passes
    assert "hot: Worker.forward_batch_generation -> PenaltiesState.apply_staged_writes -> bincount" in messages["state.py"]
    assert "`mask` of `bincount` passed `PenaltiesState.bin_mask` (pkg.state)" in messages["state.py"]
    assert "first: the device `torch.device(f'cuda:{local_rank}')` in `Worker.__init__`" in messages["state.py"]
    assert "what `Worker._pad` returns" in messages["worker.py"]
    # the device comparison on line 17 is no tensor condition: a device is followed apart from tensors
    assert all(finding["code"] != "HDL203" for finding in findings)


@pytest.mark.parametrize(("caller", "placed"), [
    # another call passes a tensor of unknown placement: the parameter is unknown
    ("def audit(values):\n    return bincount(torch.as_tensor(values), 0)\n", False),
    # another call passes on a parameter of its own that no call in the project passes: it may be anything
    ("def audit(mask):\n    return bincount(mask, 0)\n", False),
])
def test_a_parameter_is_placed_only_when_every_call_passes_a_placed_value(tmp_path, caller, placed):
    other = "import torch\nfrom pkg.state import bincount\n\n\n" + caller
    make_project(tmp_path, state=STATE, worker=WORKER, other=other)
    assert by_file(check(tmp_path)).get("state.py") == ([(14, "HDL201")] if placed else None)


def test_a_change_to_what_a_constructor_is_passed_changes_findings_in_another_file_with_the_cache(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, state=STATE, worker=WORKER)
    assert by_file(check(tmp_path, cache=True))["state.py"] == [(14, "HDL201")]
    # The worker now keeps the state on the host: state.py is unchanged, its finding goes.
    (tmp_path / "pkg" / "worker.py").write_text(WORKER.replace('PenaltiesState(4, self.device)',
                                                               'PenaltiesState(4, "cpu")'))
    assert "state.py" not in by_file(check(tmp_path, cache=True))
    assert by_file(check(tmp_path, cache=False)) == by_file(check(tmp_path, cache=True))


def test_values_are_summarized_from_the_ast():
    tree = ast.parse(STATE)
    summary = summarize(tree, "pkg.state")
    assert summary["classes"]["PenaltiesState"]["flows"] == {
        "device": [["PenaltiesState.__init__", ["p", "device"]]],
        "bin_mask": [["PenaltiesState.__init__", ["t", ["a", "device"]]]]}
    function = summary["functions"]["bincount"]
    assert function["order"] == ["mask", "index"] and function["returns"] == [[]]  # `.item()` is no tensor
    method = summary["functions"]["PenaltiesState.apply_staged_writes"]
    assert method["order"] == ["index"] and method["bound"]
    assert method["passes"] == {0: [[["a", "bin_mask"], ["p", "index"]], {}]}


@pytest.mark.parametrize("device", ["device", '"cpu"'])
def test_what_a_subclass_passes_to_super_says_nothing_of_the_base_class(tmp_path, device):
    # What HostState passes is what HostState objects hold: PenaltiesState's own objects are the worker's.
    other = ("from pkg.state import PenaltiesState\n\n\nclass HostState(PenaltiesState):\n"
             f"    def __init__(self, n, device):\n        super().__init__(n, {device})\n")
    make_project(tmp_path, state=STATE, worker=WORKER, other=other)
    assert by_file(check(tmp_path))["state.py"] == [(14, "HDL201")]


def test_a_constructor_called_under_an_imported_alias_passes_its_values(tmp_path):
    worker = WORKER.replace("from pkg.state import PenaltiesState", "from pkg.state import PenaltiesState as State")
    worker = worker.replace("PenaltiesState(4, self.device)", "State(4, self.device)")
    make_project(tmp_path, state=STATE, worker=worker)
    assert by_file(check(tmp_path))["state.py"] == [(14, "HDL201")]


LOADER = '''\
import torch


class Adapter:
    def __init__(self, ranks, device):
        self.ranks = self.prepare(ranks, device)

    def prepare(self, ranks, device):
        return torch.tensor(ranks, device=device)
'''


def test_a_copy_only_run_once_code_calls_is_not_reported(tmp_path):
    make_project(tmp_path, loader=LOADER)
    assert check(tmp_path) == []


def test_a_method_called_on_an_object_of_unknown_class_may_run_often(tmp_path):
    # `state.prepare(...)` on an object the model cannot type may be a per-step call: the copy is reported.
    runner = "def forward(state, ranks, device):\n    return state.prepare(ranks, device)\n"
    make_project(tmp_path, copies_anywhere=True, loader=LOADER, runner=runner)
    assert by_file(check(tmp_path)) == {"loader.py": [(9, "HDL101")]}


VISION = """\
import torch
from torch import nn


class Vision(nn.Module):
    def forward(self, pixels, grid: torch.Tensor, flag, sizes: list):
        longest = grid.max().item()
        if flag:
            return pixels
        return pixels[:longest]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = Vision()

    def forward(self, pixels: torch.Tensor, grid: torch.Tensor):
        return self.visual(pixels, grid, False, [1])
"""


def test_a_call_through_an_attribute_holding_a_module_runs_its_forward(tmp_path):
    # `self.visual(...)` passes the host tensor to `Vision.forward`: the model places the parameter through the call.
    text = VISION.replace("self.visual(pixels, grid,", "self.visual(pixels.cuda(), grid.cuda(),")
    make_project(tmp_path, vision=text)
    findings = check(tmp_path)
    assert by_file(findings) == {"vision.py": [(7, "HDL201")]}
    assert "`grid` of `Vision.forward` passed" in findings[0]["message"]


@pytest.mark.parametrize("configured", [False, True])
def test_module_inputs_are_on_the_gpu_only_where_configured(tmp_path, configured):
    make_project(tmp_path, vision=VISION, device="import torch\nDEVICE = torch.device('cuda')\n")
    if configured:
        (tmp_path / "pyproject.toml").write_text("[tool.h2dlint]\nmodule-inputs-on-gpu = true\n")
    findings = check(tmp_path)
    # The `.item()` on the tensor input only; `if flag:` is no tensor condition, whatever `flag`'s placement.
    assert by_file(findings) == ({"vision.py": [(7, "HDL201")]} if configured else {})
    if configured:
        assert "(an input of a module's `forward`, assumed on the module's device)" in findings[0]["message"]


def test_a_module_input_a_seen_call_passes_from_the_host_is_not_assumed_on_the_gpu(tmp_path):
    make_project(tmp_path, vision=VISION.replace("self.visual(pixels, grid,", "self.visual(pixels, torch.ones(2, 3),"),
                 device="import torch\nDEVICE = torch.device('cuda')\n")
    (tmp_path / "pyproject.toml").write_text("[tool.h2dlint]\nmodule-inputs-on-gpu = true\n")
    assert check(tmp_path) == []


TRAINER = '''\
import torch


def fit(losses, device):
    counts = torch.tensor(0, device=device)
    for loss in losses:
        loss.backward()
        counts += torch.tensor([1], device=device)
    return counts


def main(losses):
    fit(losses, torch.device("cuda"))
'''


def test_a_function_only_main_calls_runs_once_but_its_loop_does_not(tmp_path):
    # `main` runs once per process: the copy before `fit`'s loop waits once, the one in the loop every step.
    make_project(tmp_path, copies_anywhere=True, trainer=TRAINER)
    assert by_file(check(tmp_path)) == {"trainer.py": [(8, "HDL103")]}
    (tmp_path / "other").mkdir()
    make_project(tmp_path / "other", copies_anywhere=True, trainer=TRAINER.replace("def main(", "def run_epoch("))
    assert by_file(check(tmp_path / "other")) == {"trainer.py": [(5, "HDL103"), (8, "HDL103")]}


def test_the_training_loop_of_main_is_per_step(tmp_path):
    """A loop in a constructor runs once; the loop of `main` is the training loop."""
    inline = TRAINER.replace("    fit(losses, torch.device(\"cuda\"))\n", "    fit(losses, torch.device(\"cuda\"))\n"
                             "    once = torch.tensor([0], device='cuda')\n"
                             "    for loss in losses:\n        once += torch.tensor([1], device='cuda')\n")
    make_project(tmp_path, trainer=inline)
    assert by_file(check(tmp_path)) == {"trainer.py": [(8, "HDL103"), (16, "HDL103")]}


@pytest.mark.parametrize("name", ["test_trainer", "trainer_test", "trainer_benchmark", "exporter"])
def test_copies_in_test_modules_and_test_functions_are_not_reported(tmp_path, name):
    make_project(tmp_path, **{name: TRAINER.replace("def main(", "def run_epoch(")},
                 other="import torch\n\n\ndef test_sum(device):\n    for i in range(3):\n"
                       "        assert torch.tensor([i], device=device).sum() == i\n")
    assert check(tmp_path) == []


NORMALIZE = '''\
import torch


class Normalize(torch.nn.Module):
    def forward(self, x):
        return self.scale(x)

    def scale(self, x):
        return x / torch.tensor([640.0, 480.0], device="cuda")
'''


def test_a_module_for_export_is_no_root_of_hotness_and_reports_no_copy(tmp_path):
    """A `forward` in an export package (a wrapper traced once to write the model out) is not per step."""
    make_project(tmp_path, normalize=NORMALIZE)
    assert by_file(check(tmp_path)) == {"normalize.py": [(9, "HDL101")]}
    (tmp_path / "other").mkdir()
    package = make_project(tmp_path / "other", **{"__init__": ""})
    (package / "export").mkdir()
    (package / "export" / "normalize.py").write_text(NORMALIZE)
    assert check(tmp_path / "other") == []


PROBE = '''\
import torch

_CHECKED = {}


def probe(device):
    return torch.tensor([1.0, 2.0], device=device).sum()


def forward(x):
    if x.device not in _CHECKED:
        _CHECKED[x.device] = probe(x.device)
    return x * 2
'''


def test_a_function_only_a_cache_filling_branch_calls_is_not_reported(tmp_path):
    make_project(tmp_path, probe=PROBE)
    assert check(tmp_path) == []
    # Called on every forward as well, its copy is reported.
    (tmp_path / "pkg" / "probe.py").write_text(PROBE.replace("    return x * 2\n", "    return x * probe(x.device)\n"))
    assert by_file(check(tmp_path)) == {"probe.py": [(7, "HDL101")]}


LAZY_SETUP = '''import torch
from torch import nn


class Sharded(nn.Module):
    def __init__(self, order):
        super().__init__()
        self._order = order
        self._has_uninitialized_input_dist = True

    def _create_input_dist(self, device):
        self.register_buffer("_order_tensor", torch.tensor(self._order, device=device))

    def forward(self, x):
        if self._has_uninitialized_input_dist:
            self._create_input_dist(x.device)
            self._has_uninitialized_input_dist = False
        return x[self._order_tensor]
'''


def test_a_set_up_made_lazily_at_the_first_call_is_not_reported(tmp_path):
    """torchrec's input dists: made on the first `forward`, behind a flag the branch clears."""
    make_project(tmp_path, sharded=LAZY_SETUP)
    assert check(tmp_path) == []
    # A branch that leaves its flag set runs on every call: its copy is reported.
    (tmp_path / "pkg" / "sharded.py").write_text(LAZY_SETUP.replace(
        "            self._has_uninitialized_input_dist = False\n", ""))
    assert by_file(check(tmp_path)) == {"sharded.py": [(12, "HDL101")]}


UPLOAD = '''import torch


def step(rows, device):
    for row in rows:
        yield torch.tensor(row, device=device)
'''


def test_a_device_of_unknown_kind_in_a_module_for_another_accelerator_is_no_cuda_device(tmp_path):
    """torchrec's `experimental/torch_tpu/`, vLLM's `tpu_model_runner.py`: their devices are that accelerator's."""
    package = make_project(tmp_path, upload=UPLOAD, tpu_upload=UPLOAD)
    (package / "torch_tpu").mkdir()
    (package / "torch_tpu" / "upload.py").write_text(UPLOAD)
    assert {(finding["filename"].rpartition("pkg/")[2], finding["code"]) for finding in check(tmp_path)} == {
        ("upload.py", "HDL101")}
    # Where the device is proven CUDA, it is reported there too.
    (package / "torch_tpu" / "upload.py").write_text(UPLOAD.replace("device=device", "device='cuda'"))
    assert len(check(tmp_path)) == 2


PER_LAYER_AND_EVALUATION = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, sizes, device):
        super().__init__()
        self.tables = [torch.tensor(size, device=device) for size in sizes]
        for size in sizes:
            self.register_buffer(f"t{size}", torch.tensor([size], device=device))


class Trainer:
    def evaluate(self, loader, device):
        for batch in loader:
            margin = torch.tensor(batch.margin).to(device)

    def fit(self, loader, device):
        for step, batch in enumerate(loader):
            if step % self.eval_interval == 0:
                self.evaluate(loader, device)
'''


def test_a_loop_in_a_constructor_runs_once_and_one_in_a_periodic_evaluation_per_batch(tmp_path):
    """A copy per layer in `__init__` waits at start-up; an evaluation every so many steps copies per batch."""
    make_project(tmp_path, model=PER_LAYER_AND_EVALUATION)
    assert by_file(check(tmp_path)) == {"model.py": [(16, "HDL102")]}


@pytest.mark.parametrize(("imported", "base", "constructor_reported"), [
    ("import pytorch_lightning as pl", "pl.LightningModule", False),
    ("from lightning.pytorch import LightningModule", "LightningModule", False),
    ("from transformers import PreTrainedModel", "PreTrainedModel", False),
    ("from other_library import Base", "Base", True),  # any class's constructor may build a batch every step
])
def test_a_class_derived_from_a_library_module_class_is_a_module(tmp_path, imported, base, constructor_reported):
    code = PER_LAYER_AND_EVALUATION.replace("from torch import nn\n", f"{imported}\n").replace("(nn.Module)",
                                                                                            f"({base})")
    make_project(tmp_path, model=code)
    assert ((10, "HDL101") in by_file(check(tmp_path))["model.py"]) is constructor_reported


READ_BACK = '''def forward(self, batch):
    lens = batch.seq_lens.tolist()
    return lens, batch.seq_lens_cpu
'''


def test_a_module_whose_path_names_another_accelerator_reports_no_sync(tmp_path):
    """sglang's `hardware_backend/npu/`: the batch's device copies are NPU tensors there, not CUDA ones."""
    package = make_project(tmp_path, backend=READ_BACK)
    (package / "npu").mkdir()
    (package / "npu" / "backend.py").write_text(READ_BACK)
    assert {(finding["filename"].rpartition("pkg/")[2], finding["code"]) for finding in check(tmp_path)} == {
        ("backend.py", "HDL201")}


REARMED = LAZY_SETUP.replace('''    def forward(self, x):''', '''    def set_order(self, order):
        self._order = order
        self._has_uninitialized_input_dist = True

    def forward(self, x):''')


def test_a_flag_armed_again_outside_the_constructor_is_no_lazy_set_up(tmp_path):
    """A setter called every step that arms the flag again makes its branch run every step."""
    make_project(tmp_path, sharded=REARMED)
    assert by_file(check(tmp_path)) == {"sharded.py": [(12, "HDL101")]}


PER_STEP_BATCH = '''import torch
from torch import nn


class Batch:
    def __init__(self, samples, keys):
        self.data = {}
        for key in keys:
            self.data[key] = torch.tensor([sample[key] for sample in samples], device="cuda")


class Model(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        for size in sizes:
            self.register_buffer(f"t{size}", torch.tensor([size], device="cuda"))


def train(model, loader, keys):
    for samples in loader:
        model(Batch(samples, keys))
'''


def test_a_loop_in_the_constructor_of_a_module_runs_once_and_of_a_batch_per_step(tmp_path):
    make_project(tmp_path, batch=PER_STEP_BATCH)
    assert by_file(check(tmp_path)) == {"batch.py": [(9, "HDL101")]}


SCHEDULE = '''\
from dataclasses import dataclass

import torch


@dataclass
class ScheduleBatch:
    reqs: list
    device: torch.device = torch.device("cuda")


def schedule(reqs):
    return ScheduleBatch(reqs=reqs)
'''

SAMPLING = '''\
import dataclasses

import torch

from pkg.schedule import ScheduleBatch


@dataclasses.dataclass
class SamplingInfo:
    top_ps: torch.Tensor
    vocab_size: int = 32000

    @classmethod
    def from_batch(cls, batch: ScheduleBatch):
        device = batch.device
        top_ps = torch.tensor([r.top_p for r in batch.reqs], device=device)
        return cls(top_ps=top_ps)
'''

VERIFIER = '''\
import torch

from pkg.sampling import SamplingInfo


class Verifier(torch.nn.Module):
    def forward(self, info: SamplingInfo, probs):
        if not torch.all(info.top_ps == 1.0):
            probs = probs / info.top_ps
        return probs
'''


def test_dataclass_fields_are_placed_by_what_the_calls_building_objects_pass(tmp_path):
    """A dataclass's fields are its constructor's parameters: `cls(top_ps=...)` in a classmethod passes a tensor
    made on `batch.device`, a field whose default, `torch.device("cuda")`, the one call building a ScheduleBatch
    leaves as it is."""
    make_project(tmp_path, schedule=SCHEDULE, sampling=SAMPLING, verifier=VERIFIER)
    findings = [finding for finding in check(tmp_path) if finding["filename"].endswith("verifier.py")]
    assert by_file(findings) == {"verifier.py": [(8, "HDL203")]}
    assert "`SamplingInfo.top_ps`" in findings[0]["message"]
    summary = summarize(ast.parse(SAMPLING), "pkg.sampling")
    assert summary["functions"]["SamplingInfo.__init__"]["order"] == ["top_ps", "vocab_size"]
    assert summary["functions"]["SamplingInfo.from_batch"]["calls"][-1] == "n:SamplingInfo"


@pytest.mark.parametrize("schedule", [
    SCHEDULE.replace('torch.device("cuda")', 'torch.device("cpu")'),  # the default is the host
    SCHEDULE.replace("ScheduleBatch(reqs=reqs)", "ScheduleBatch(reqs, *extra)"),  # a field passed, unseen
    SCHEDULE.replace("@dataclass\n", ""),  # no dataclass: no constructor takes the fields
    SCHEDULE.replace("@dataclass\n", "@dataclass(init=False)\n"),
])
def test_dataclass_fields_stay_unplaced_where_a_call_may_pass_anything(tmp_path, schedule):
    make_project(tmp_path, schedule=schedule, sampling=SAMPLING, verifier=VERIFIER)
    assert "verifier.py" not in by_file(check(tmp_path))


SCALE = '''\
import torch


class Scale(torch.nn.Module):
    def forward(self, x):
        if {test}:
            factor = torch.tensor([2.0], device=x.device)
        else:
            factor = torch.tensor([3.0], device=x.device)
        return x.cuda() * factor
'''


@pytest.mark.parametrize(("test", "reported"), [
    ("torch.jit.is_scripting()", [9]),  # the `else` runs in eager use
    ("torch.compiler.is_compiling() and x.dim() > 1", [9]),
    ("not torch.jit.is_tracing()", [7]),
    ("torchvision._is_tracing()", [9]),  # a library's own wrapper
    ("x.dim() > 1", [7, 9]),
])
def test_a_copy_made_only_while_a_model_is_traced_or_compiled_is_not_reported(tmp_path, test, reported):
    """Code that runs only while the model is scripted, traced, compiled or exported makes a constant of the graph,
    never a copy per step in eager use."""
    make_project(tmp_path, scale=SCALE.format(test=test))
    assert [row for row, _ in by_file(check(tmp_path)).get("scale.py", [])] == reported


CHECK_BOXES = '''\
import torch


class Detector(torch.nn.Module):
    def forward(self, boxes):
        boxes = boxes.cuda()
        bad = boxes[:, 2:] <= boxes[:, :2]
        if bad.any():
            first = torch.where(bad.any(dim=1))[0][0]
            floor = torch.tensor([0.0, 1.0], device=boxes.device)
            {last}
        return boxes
'''


@pytest.mark.parametrize(("last", "reported"), [
    ("raise ValueError(f'bad box {first}, {floor}')", [8]),
    ("torch._assert(False, f'bad box {first}, {floor}')", [8]),
    ("assert False, (first, floor)", [8]),
    ("boxes = boxes.clamp(min=floor[0])", [8, 9, 10]),  # a repair made every time the test holds
    ("if boxes.dim() > 2:\n                return floor\n            raise ValueError", [8, 9, 10]),  # a dispatch
])
def test_the_block_that_describes_bad_input_before_failing_is_not_reported(tmp_path, last, reported):
    """The test runs every step; the block that ends by raising runs only on bad input."""
    make_project(tmp_path, detector=CHECK_BOXES.format(last=last))
    assert [row for row, _ in by_file(check(tmp_path, "--select", "ALL")).get("detector.py", [])] == reported


NON_FINITE = '''\
import torch


class Koopman(torch.nn.Module):
    def forward(self, x, y):
        self.K = torch.linalg.lstsq(x, y).solution
        if {test}:
            print("K went NaN: the identity instead")
            self.K = torch.eye(self.K.shape[1]).to(self.K.device)
        return x @ self.K
'''


@pytest.mark.parametrize(("test", "reported"), [
    ("torch.isnan(self.K).any()", []),
    ("self.K.isinf().any() or torch.any(torch.isnan(self.K))", []),
    ("not torch.isfinite(self.K).all()", []),
    ("self.K.isnan().any() and x.dim() > 2", []),
    ("self.K.isnan().all()", [9]),  # not a test for any NaN: a branch like another
    ("self.K.isnan().any() or x.dim() > 2", [9]),  # the body runs on every batch of more dimensions too
])
def test_the_body_that_handles_nan_or_infinite_values_runs_rarely(tmp_path, test, reported):
    """The test reads the GPU every step; the fallback for a diverged step (its host copy) runs only then."""
    make_project(tmp_path, koopman=NON_FINITE.format(test=test))
    assert [row for row, code in by_file(check(tmp_path)).get("koopman.py", []) if code == "HDL102"] == reported


CLIPS = '''\
import torch
from torch.utils.data import Dataset

from pkg.features import frames


class Clips(Dataset):
    def __getitem__(self, index):
        return frames(self.audio[index])
'''

FEATURES = '''\
import torch


def frames(audio):
    peak = audio.abs().max().item()
    return torch.tensor([peak, 1.0], device=audio.device)
'''


def test_code_a_dataset_runs_to_prepare_samples_holds_host_tensors(tmp_path, monkeypatch):
    """A data loader calls a dataset's `__getitem__` to prepare each sample on the host: a tensor there is not on
    the GPU unless the code puts it there. A change of the dataset class in its own file changes the findings
    in the file of the function it calls."""
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, copies_anywhere=True, clips=CLIPS, features=FEATURES)
    assert by_file(check(tmp_path, "--select", "ALL", cache=True)) == {}
    (tmp_path / "pkg" / "clips.py").write_text(CLIPS.replace("class Clips(Dataset):", "class Clips:"))
    assert by_file(check(tmp_path, "--select", "ALL", cache=True)) == {"features.py": [(6, "HDL101")]}


@pytest.mark.parametrize("clips", [
    # Through a method of the dataset, or a helper object it builds: two calls from `__getitem__`.
    CLIPS.replace("return frames(self.audio[index])", "return self.prepare(index)\n\n    def prepare(self, index):\n"
                  "        return frames(self.audio[index])"),
    CLIPS.replace("return frames(self.audio[index])", "return Prep().run(self.audio[index])\n\n\nclass Prep:\n"
                  "    def run(self, audio):\n        return frames(audio)"),
])
def test_code_a_dataset_runs_through_further_calls_holds_host_tensors(tmp_path, clips):
    make_project(tmp_path, copies_anywhere=True, clips=clips, features=FEATURES)
    assert by_file(check(tmp_path, "--select", "ALL")) == {}
    (tmp_path / "pkg" / "clips.py").write_text(clips.replace("class Clips(Dataset):", "class Clips:"))
    assert by_file(check(tmp_path, "--select", "ALL")) == {"features.py": [(6, "HDL101")]}


@pytest.mark.parametrize("clips", [
    CLIPS.replace("Dataset", "IterableDataset").replace("__getitem__(self, index)", "__iter__(self)"),
    CLIPS + "\n\nclass Model(torch.nn.Module):\n    def forward(self, audio):\n        return frames(audio.cuda())\n",
])
def test_an_iterable_dataset_or_a_caller_on_the_step_is_not_sample_preparation(tmp_path, clips):
    """An `IterableDataset`'s `__iter__` may drive a policy on the GPU (torchrl's collectors); a function the
    model's `forward` calls too runs on the step."""
    make_project(tmp_path, copies_anywhere=True, clips=clips.replace("self.audio[index]", "self.audio"),
                 features=FEATURES)
    assert (6, "HDL101") in by_file(check(tmp_path, "--select", "ALL")).get("features.py", [])


LOADERS = '''\
import torch
from torch.utils.data import DataLoader


def get_loaders(values, gpu):
    data = torch.tensor(values).to(f"cuda:{gpu}")
    return DataLoader(data, batch_size=4)


def train(model, values):
    loader = DataLoader(values, batch_size=4)
    for batch in loader:
        model(torch.tensor(batch, device="cuda"))
'''


def test_a_copy_where_data_loaders_are_built_is_made_once_but_one_in_their_loop_is_not(tmp_path):
    make_project(tmp_path, loaders=LOADERS)
    findings = by_file(check(tmp_path))
    assert [row for row, _ in findings["loaders.py"]] == [13]


@pytest.mark.parametrize(("body", "bases", "order"), [
    ("a: int\n    b: int\n", "", ["a", "b"]),
    ("a: int\n    _: KW_ONLY\n    b: int\n", "", ["a"]),
    ("a: int\n    v: InitVar[int]\n    b: int\n", "", ["a"]),
    ("a: int\n    _: KW_ONLY\n    b: int\n", "(Base)", []),  # the base's fields come first
    ("a: int\n    n: ClassVar[int] = 0\n    b: int = field(init=False)\n    c: int = 1\n", "", ["a", "c"]),
])
def test_the_init_a_dataclass_gets_takes_its_fields_in_order_where_the_order_is_certain(body, bases, order):
    code = f"from dataclasses import dataclass\n\n\n@dataclass\nclass Point{bases}:\n    {body}"
    summary = summarize(ast.parse(code), "pkg.point")
    assert summary["functions"]["Point.__init__"]["order"] == order


UPLOADS = '''\
import torch


def upload(ids, device):
    return torch.tensor(ids, device=device)


def upload_rows(rows, device):
    for row in rows:
        yield torch.tensor(row, device=device)


def expand(x, counts):
    return x.repeat_interleave(counts.cuda())


class Table:
    def __init__(self, device):
        self.device = device

    @property
    def ids(self):
        return torch.tensor([1, 2], device=self.device)
'''


def test_code_nothing_in_the_project_runs_has_no_copy_or_shape_findings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, copies_anywhere=True, uploads=UPLOADS, user="from pkg.uploads import Table\n")
    # The project uses the module, but no module calls `upload`, `upload_rows` or `expand`: the project shows no
    # sign that they run at all (in held-out trees, such code was mostly set-up, dead, benchmark inputs, or API
    # the project never calls per step), loops and all. A property runs where it is read.
    assert by_file(check(tmp_path, cache=True)) == {"uploads.py": [(23, "HDL101")]}
    # A call from another file, in code of unknown hotness, brings them back, through the cache.
    (tmp_path / "pkg" / "user.py").write_text(
        "from pkg.uploads import expand, upload, upload_rows\n\n\ndef prepare(ids, x, counts):\n"
        "    return upload(ids, 'cuda'), expand(x, counts), list(upload_rows([ids], 'cuda'))\n")
    assert by_file(check(tmp_path, cache=True)) == {
        "uploads.py": [(5, "HDL101"), (10, "HDL101"), (14, "HDL304"), (23, "HDL101")]}


def test_the_loop_of_main_is_reported_though_no_call_of_main_shows(tmp_path):
    # A console script's entry point: the project's modules import the module, none calls `main`.
    make_project(tmp_path, copies_anywhere=True, user="from pkg.cli import VERSION\n",
                 cli="import torch\n\nVERSION = 1\n\n\ndef main(rows):\n    for row in rows:\n"
                     "        yield torch.tensor(row, device='cuda')\n")
    assert by_file(check(tmp_path))["cli.py"] == [(8, "HDL101")]


def test_a_sync_in_a_loop_of_code_nothing_in_the_project_runs_is_still_reported(tmp_path):
    # Unlike copies (set-up, mostly), reads in such loops were mostly right in held-out trees: a library's own
    # training or evaluation loop, which users call (`.item()` per batch). The copy beside it is not reported.
    make_project(tmp_path, copies_anywhere=True, user="from pkg.train import Table\n",
                 train="import torch\n\n\nclass Table:\n    pass\n\n\ndef fit(batches):\n    total = 0.0\n"
                       "    for batch in batches:\n        scale = torch.tensor([0.5], device='cuda')\n"
                       "        loss = (batch.cuda() * scale).sum()\n        total += loss.item()\n"
                       "    return total\n")
    assert by_file(check(tmp_path))["train.py"] == [(13, "HDL201")]


@pytest.mark.parametrize("hand_on", [
    # Megatron's `get_forward_backward_func()` returns the schedule that the training loop then calls.
    "def get_upload():\n    return upload if torch.cuda.is_available() else None\n",
    "def get_schedule(pipelined):\n    if pipelined:\n        func = expand\n    else:\n        func = upload\n"
    "    return func\n",
    # A callback registered with, or passed to, code that will call it.
    "def register(pool):\n    pool.on_alloc(upload)\n",
    "def embed(routine):\n    return routine(funcs={'audio': upload})\n",
    # Stored: a registry, a monkey patch.
    "HANDLERS = {'upload': upload}\n",
    "def patch(model):\n    model.upload = upload\n",
    # Named to be called later: a list to loop over, a hook chosen by a condition.
    "def run_all(ids):\n    for fn in [upload]:\n        fn(ids, 'cuda')\n",
    "def hook(param, ids, cond):\n    param.register_hook(upload if cond else None)\n",
    # Called by a method of a class a factory defines (vLLM's chunked local attention builder), which the model
    # does not summarize: a caller it cannot see.
    "def make_builder(base):\n    class Builder(base):\n        def build(self, ids):\n"
    "            return upload(ids, 'cuda')\n    return Builder\n",
])
def test_a_function_handed_on_by_a_return_or_to_a_call_is_not_taken_for_uncalled(tmp_path, hand_on):
    make_project(tmp_path, copies_anywhere=True, uploads=UPLOADS + "\n\n" + hand_on,
                 user="from pkg.uploads import Table\n")
    assert (5, "HDL101") in by_file(check(tmp_path))["uploads.py"]


@pytest.mark.parametrize("nested", [
    # A call on an object (`random.upload` may be any library's), or of a parameter or a local of the nested method,
    # names no function of the project.
    "import random\n\n\ndef make_builder(base):\n    class Builder(base):\n        def build(self, ids):\n"
    "            return random.upload(ids, 'cuda')\n    return Builder\n",
    "def make_builder(base):\n    class Builder(base):\n        def build(self, upload, ids):\n"
    "            return upload(ids, 'cuda')\n    return Builder\n",
    "def make_builder(base, fns):\n    class Builder(base):\n        def build(self, ids):\n"
    "            upload = fns[0]\n            return upload(ids, 'cuda')\n    return Builder\n",
])
def test_calls_in_a_factory_made_class_name_only_the_functions_they_call_by_a_bare_name(tmp_path, nested):
    make_project(tmp_path, copies_anywhere=True, uploads=UPLOADS, user="from pkg.uploads import Table\n",
                 factory=nested)
    assert (5, "HDL101") not in by_file(check(tmp_path)).get("uploads.py", [])


# Methods that code outside the project calls: an event hook (`on_step_end`, called by the framework that raises
# the event, a trainer's callback) and a hook of a base from another library (a Hugging Face `Trainer` calls
# `compute_loss` every step); not the other methods, nor an `nn.Module`'s, which calls none of `expand`.
EVENT_HOOKS = "import torch\n\n\nclass Hooks:\n    def on_step_end(self, ids):\n" \
              "        return torch.tensor(ids, device='cuda')\n\n    def step_end(self, ids):\n" \
              "        return torch.tensor(ids, device='cuda')\n"
HF_TRAINER = "import torch\nfrom transformers import Trainer\n\n\nclass MyTrainer(Trainer):\n" \
             "    def compute_loss(self, ids):\n        return torch.tensor(ids, device='cuda')\n\n\n" \
             "class Net(torch.nn.Module):\n    def expand(self, ids):\n        return torch.tensor(ids, device='cuda')\n"


@pytest.mark.parametrize("source, reported", [(EVENT_HOOKS, 6), (HF_TRAINER, 7)])
def test_methods_code_outside_the_project_calls_are_not_taken_for_uncalled(tmp_path, source, reported):
    make_project(tmp_path, copies_anywhere=True, hooks=source, user="from pkg import hooks\n")
    assert by_file(check(tmp_path)) == {"hooks.py": [(reported, "HDL101")]}


def test_the_functions_of_a_module_no_module_imports_are_reported_uncalled(tmp_path):
    # A script or an example of its own (examples/quickstart.py): the project says nothing of how it runs.
    make_project(tmp_path, copies_anywhere=True, uploads=UPLOADS)
    assert (5, "HDL101") in by_file(check(tmp_path))["uploads.py"]


ALIASES = '''\
import torch


def _grouped(x, counts):
    return x.repeat_interleave(counts.cuda())


def _looped(x, counts):
    return x


class Experts(torch.nn.Module):
    def __init__(self, grouped):
        if grouped:
            self._decode = self._decode_loop_labels
        else:
            self._decode = self._decode_frames

    def forward(self, x, counts, grouped):
        run = _grouped if grouped else _looped
        return run(x, counts), self._decode(x)

    def _decode_loop_labels(self, x):
        return torch.nonzero(x)

    def _decode_frames(self, x):
        return x
'''


def test_calls_through_a_local_or_an_attribute_bound_to_a_function_are_calls_of_it(tmp_path):
    from h2dlint.project import project_model_for
    from h2dlint.settings import Settings

    make_project(tmp_path, experts=ALIASES)
    model = project_model_for([tmp_path / "pkg"], Settings(), None, 1).model
    chains = {name.rpartition("pkg.")[2]: hot.describe() for name, hot in model.hot.items()}
    assert chains["experts._grouped"] == "Experts.forward -> _grouped"
    assert chains["experts._looped"] == "Experts.forward -> _looped"
    assert chains["experts.Experts._decode_loop_labels"] == "Experts.forward -> Experts._decode_loop_labels"
    assert chains["experts.Experts._decode_frames"] == "Experts.forward -> Experts._decode_frames"


CODEC = """\
import torch


def decode(frames, device="cpu"):
    for frame in frames:
        yield torch.tensor(frame, device=device)
"""


def test_a_device_parameter_every_call_leaves_at_its_cpu_default_is_no_cuda_device(tmp_path):
    # encodec's `decompress(..., device="cpu")`: every caller in the project decodes on the CPU.
    make_project(tmp_path, codec=CODEC, cli="from pkg.codec import decode\n\n\ndef run(frames):\n"
                                          "    return list(decode(frames))\n")
    assert by_file(check(tmp_path)) == {}
    # One call passing a CUDA device: the callers disagree, and the copy may go to the GPU.
    (tmp_path / "pkg" / "gpu.py").write_text("from pkg.codec import decode\n\n\ndef run_on_gpu(frames):\n"
                                             "    return list(decode(frames, device='cuda'))\n")
    assert by_file(check(tmp_path)) == {"codec.py": [(6, "HDL101")]}


@pytest.mark.parametrize("hidden", [
    "import functools\n\n\ndef on_gpu():\n    return functools.partial(decode, device='cuda')\n",
    "DECODERS = {'default': decode}\n",
])
def test_a_default_device_says_nothing_where_calls_the_model_cannot_see_may_pass_another(tmp_path, hidden):
    # Handed on as a value, `decode` may be called with `device="cuda"` where no summary shows it.
    make_project(tmp_path, codec=CODEC, cli="from pkg.codec import decode\n\n\ndef run(frames):\n"
                                          f"    return list(decode(frames))\n\n\n{hidden}")
    assert by_file(check(tmp_path)) == {"codec.py": [(6, "HDL101")]}


def test_a_function_of_the_same_name_handed_on_in_another_module_leaves_the_default_known(tmp_path):
    # `other.py` hands on its own `decode`; the codec's, which every call leaves at `device="cpu"`, is not handed on.
    other = ("import functools\n\n\ndef decode(frames, device):\n    return frames\n\n\n"
             "def on_gpu():\n    return functools.partial(decode, device='cuda')\n")
    make_project(tmp_path, codec=CODEC, other=other, cli="from pkg.codec import decode\n\n\ndef run(frames):\n"
                                                         "    return list(decode(frames))\n")
    assert by_file(check(tmp_path)) == {}


def test_a_function_imported_from_either_of_two_modules_and_handed_on_may_be_either(tmp_path):
    # `try: from pkg.slow import decode` / `except ImportError: from pkg.codec import decode`: either is handed on.
    hands_on = ("import functools\n\ntry:\n    from pkg.slow import decode\nexcept ImportError:\n"
                "    from pkg.codec import decode\n\n\ndef on_gpu():\n    return functools.partial(decode, device='cuda')\n")
    make_project(tmp_path, codec=CODEC, slow="def decode(frames, device):\n    return frames\n", gpu=hands_on,
                 cli="from pkg.codec import decode\n\n\ndef run(frames):\n    return list(decode(frames))\n")
    assert by_file(check(tmp_path)) == {"codec.py": [(6, "HDL101")]}


def test_a_call_passing_nothing_the_model_places_still_leaves_the_device_at_its_default(tmp_path):
    # deepchem's `parse_moldesc(self.moldesc)` with `device=torch.device('cpu')` left out: the call passes only
    # what the model cannot place, and which parameters it passes is all that tells the default is taken.
    make_project(tmp_path, codec=CODEC, cli="from pkg.codec import decode\n\n\ndef run():\n"
                                          "    return list(decode([[1, 2], [3]]))\n")
    assert by_file(check(tmp_path)) == {}
    (tmp_path / "pkg" / "cli.py").write_text("from pkg.codec import decode\n\n\ndef run(device):\n"
                                             "    return list(decode([[1, 2], [3]], device))\n")
    assert by_file(check(tmp_path)) == {"codec.py": [(6, "HDL101")]}


STATES = """\
import torch


class State:
    def admit(self, index):
        pass


class DefaultState(State):
    pass


class EncoderState(State):
    pass


class DiffusionState(State):
    def __init__(self):
        self.step = torch.zeros(8, dtype=torch.int64, device="cuda")

    def admit(self, index):
        return torch.tensor([index], device="cuda")
"""

STATE_FACTORY = """\
from pkg.states import DefaultState, EncoderState


def init_state(encoder, model):
    if hasattr(model, "state_class"):
        cls = model.state_class()
        return cls(model)
    if encoder:
        return EncoderState()
    return DefaultState()
"""

STATE_RUNNER = """\
from pkg.factory import init_state


class Runner:
    def __init__(self, encoder, model):
        self.state = init_state(encoder, model)

    def execute_model(self, index):
        self.state.admit(index)
"""


def test_an_attribute_assigned_a_factorys_result_has_the_class_all_it_returns_share(tmp_path):
    # vLLM's `self.model_state = init_model_state(...)`: no annotation, one of several `ModelState` subclasses (or
    # a class the model hands over), so `self.model_state.add_request(...)` may run any override of it.
    make_project(tmp_path, states=STATES, factory=STATE_FACTORY, runner=STATE_RUNNER)
    findings = check(tmp_path)
    assert by_file(findings) == {"states.py": [(22, "HDL101")]}
    assert findings[0]["evidence"]["hot"] == "Runner.execute_model -> DiffusionState.admit"
    # Classes with no common base, or a return of a value that is no object made there, say nothing of what the
    # attribute holds.
    (tmp_path / "pkg" / "factory.py").write_text(STATE_FACTORY.replace("return DefaultState()", "return Other()")
                                                 + "\n\nclass Other:\n    pass\n")
    assert check(tmp_path) == []
    (tmp_path / "pkg" / "factory.py").write_text(STATE_FACTORY.replace("return DefaultState()", "return model"))
    assert check(tmp_path) == []


def test_an_attribute_assigned_an_annotated_parameter_has_the_annotations_class(tmp_path):
    # vLLM's encoder runner: `self.model = model` of a parameter `model: SupportsMultiModal`, a protocol every
    # multimodal model derives from; `self.model.embed_multimodal(...)` may run any of theirs.
    interfaces = "from typing import Protocol\n\n\nclass SupportsImages(Protocol):\n    def embed(self, images):\n" \
                 "        ...\n"
    model = ("import torch\nfrom pkg.interfaces import SupportsImages\n\n\nclass Chameleon(SupportsImages):\n"
             "    def embed(self, images):\n        return torch.tensor(images, device='cuda')\n")
    runner = ("from pkg.interfaces import SupportsImages\n\n\nclass EncoderRunner:\n"
              "    def __init__(self, model: SupportsImages):\n        self.model = model\n\n"
              "    def execute_model(self, images):\n        return self.model.embed(images)\n")
    make_project(tmp_path, interfaces=interfaces, model=model, runner=runner)
    findings = check(tmp_path)
    assert by_file(findings) == {"model.py": [(7, "HDL101")]}
    assert findings[0]["evidence"]["hot"] == "EncoderRunner.execute_model -> Chameleon.embed"
    (tmp_path / "pkg" / "runner.py").write_text(runner.replace("model: SupportsImages", "model"))
    assert check(tmp_path) == []


TYPED_RESULT_BUILDERS = """\
import torch


class MetadataBuilder:
    def build(self, lens):
        raise NotImplementedError


class FlashBuilder(MetadataBuilder):
    def build(self, lens):
        return torch.tensor(lens, device="cuda")


class Group:
    def __init__(self, builders):
        self.builders = builders

    def get_builder(self, index: int = 0) -> MetadataBuilder:
        return self.builders[index]

    def build_metadata(self, lens):
        return self.get_builder(0).build(lens)
"""

TYPED_RESULT_RUNNER = """\
from pkg.builders import Group


class Runner:
    def __init__(self, builders):
        self.group = Group(builders)

    def execute_model(self, lens):
        return self.group.build_metadata(lens)
"""


def test_a_method_called_on_a_calls_annotated_result_runs_the_classs_overrides(tmp_path):
    # vLLM's `self.get_metadata_builder(ubatch_idx).build(...)`: the builder's class is the getter's annotation, so
    # the call may run every backend's `build`, as it would through a local bound to the getter's result.
    make_project(tmp_path, builders=TYPED_RESULT_BUILDERS, runner=TYPED_RESULT_RUNNER)
    findings = check(tmp_path)
    assert by_file(findings) == {"builders.py": [(11, "HDL101")]}
    assert findings[0]["evidence"]["hot"] == "Runner.execute_model -> Group.build_metadata -> FlashBuilder.build"
    # Without the annotation nothing says what the getter returns: `build`, a common name, is not followed.
    (tmp_path / "pkg" / "builders.py").write_text(TYPED_RESULT_BUILDERS.replace(" -> MetadataBuilder", ""))
    assert check(tmp_path) == []

ENVS = """\
import torch


class EnvBase:
    def reset(self):
        return self._reset()

    def _reset(self):
        raise NotImplementedError


class ModelEnv(EnvBase):
    def _reset(self):
        return torch.zeros(2, device="cuda")


class Pendulum(EnvBase):
    def _reset(self):
        return torch.tensor([0.5, 0.1], device="cuda")
"""

ENV_LOSS = """\
from pkg.envs import ModelEnv


class ActorLoss:
    def __init__(self, env: ModelEnv):
        self.env = env

    def execute_model(self, batch):
        return self.env.reset()
"""


def test_a_bases_method_called_on_a_subclass_runs_that_subclasss_overrides_only(tmp_path):
    # TorchRL's Dreamer loss resets its model-based environment every step: `EnvBase.reset`, inherited, calls
    # `self._reset()`, which on that object is `ModelEnv._reset`, not the pendulum's.
    make_project(tmp_path, envs=ENVS, loss=ENV_LOSS)
    assert check(tmp_path) == []
    # On an object annotated as any environment, any environment's `_reset` may run.
    (tmp_path / "pkg" / "loss.py").write_text(ENV_LOSS.replace("ModelEnv", "EnvBase"))
    findings = check(tmp_path)
    assert by_file(findings) == {"envs.py": [(19, "HDL101")]}
    assert findings[0]["evidence"]["hot"] == "ActorLoss.execute_model -> EnvBase.reset -> Pendulum._reset"


PATTERN = """\
from functools import lru_cache

import numpy as np
import torch


class Pattern:
    def __init__(self):
        self._scatter_indexes = lru_cache(100)(self._scatter_indexes)

    def _scatter_indexes(self, steps, device):
        return torch.from_numpy(np.arange(steps)).to(device)

    def build(self, codes):
        return codes[..., self._scatter_indexes(codes.shape[-1], codes.device)]


class Trainer:
    def __init__(self):
        self.pattern = Pattern()

    def training_step(self, codes):
        return self.pattern.build(codes)
"""


def test_a_method_wrapped_in_a_cache_on_its_object_runs_once_per_arguments(tmp_path):
    # stable-audio-tools' `Pattern.__post_init__`: `self.m = lru_cache(100)(self.m)`; the copy runs once per shape.
    make_project(tmp_path, pattern=PATTERN)
    assert check(tmp_path) == []
    (tmp_path / "pkg" / "pattern.py").write_text(PATTERN.replace(
        "        self._scatter_indexes = lru_cache(100)(self._scatter_indexes)\n", "        pass\n"))
    findings = check(tmp_path)
    assert by_file(findings) == {"pattern.py": [(12, "HDL102")]}
    assert findings[0]["evidence"]["hot"] == "Trainer.training_step -> Pattern.build -> Pattern._scatter_indexes"


def test_a_method_wrapped_in_a_cache_is_no_copy_outside_hot_code_either(tmp_path):
    # The file's own index knows the wrapped method as the project model does.
    make_project(tmp_path, copies_anywhere=True, pattern=PATTERN)
    assert check(tmp_path) == []


def test_a_parameters_annotation_gives_way_to_a_class_written_for_the_attribute(tmp_path):
    # `model: nn.Module` says less than the wrapper the constructor may put in its place.
    runner = ("from torch import nn\nfrom pkg.wrapper import Wrapper\n\n\nclass Runner:\n"
              "    def __init__(self, model: nn.Module, compile):\n        self.model = model\n"
              "        if compile:\n            self.model = Wrapper(self.model)\n\n"
              "    def execute_model(self, x):\n        return self.model.prepare_batch(x)\n")
    wrapper = ("import torch\n\n\nclass Wrapper:\n    def __init__(self, model):\n        self.model = model\n\n"
               "    def prepare_batch(self, x):\n        return torch.tensor(x, device='cuda')\n")
    others = "".join(f"class Other{i}:\n    def prepare_batch(self, x):\n        return x\n\n\n" for i in range(4))
    make_project(tmp_path, runner=runner, wrapper=wrapper, others=others)
    findings = check(tmp_path)
    assert by_file(findings) == {"wrapper.py": [(9, "HDL101")]}
    assert findings[0]["evidence"]["hot"] == "Runner.execute_model -> Wrapper.prepare_batch"


def test_what_a_callback_does_past_an_early_return_off_its_period_is_not_per_step(tmp_path):
    # A demo callback runs every batch and returns at once but every `demo_every` steps.
    callback = ("import torch\n\n\nclass Demo:\n    def on_train_batch_end(self, trainer, module):\n"
                "        if (trainer.global_step - 1) % self.demo_every != 0:\n            return\n"
                "        return torch.randn(4).to(module.device)\n")
    make_project(tmp_path, demo=callback)
    assert check(tmp_path) == []
    (tmp_path / "pkg" / "demo.py").write_text(callback.replace("self.demo_every != 0", "2 != 0"))
    assert by_file(check(tmp_path)) == {"demo.py": [(8, "HDL102")]}


GATHER = """import torch
import torch.distributed as dist


def all_gather(data, device):
    return torch.tensor([len(data)], device=device)


class GatherLayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = [torch.zeros_like(x)]
        CALL
        return out
"""


@pytest.mark.parametrize(("call", "reported"), [
    ("dist.all_gather(out, x)", False),  # torch's collective, not the module's own `all_gather`
    ("torch.distributed.all_gather(out, x)", False),
    ("all_gather(out, x.device)", True),
])
@pytest.mark.parametrize("top_level", [False, True])
def test_a_library_module_is_no_project_module_that_ends_with_its_name(tmp_path, call, reported, top_level):
    # sam2's training/utils/distributed.py defines an `all_gather` of its own beside torch.distributed's
    package = make_project(tmp_path, distributed=GATHER.replace("CALL", call))
    if top_level:  # `distributed.py` beside the package: the module `distributed` itself
        (package / "distributed.py").rename(tmp_path / "distributed.py")
    findings = check(tmp_path) if not top_level else json.loads(CliRunner().invoke(
        main, ["check", str(tmp_path), "--output-format", "json", "--exit-zero", "--no-cache"]).stdout)
    assert (by_file(findings) == {"distributed.py": [(6, "HDL101")]}) is reported


@pytest.mark.parametrize("package", [False, True])
@pytest.mark.parametrize("folders", [("sglang", "srt"), ("copy", "tree")])
def test_imports_spelling_the_packages_above_the_project_root_resolve(tmp_path, folders, package):
    # sglang's `srt` checked alone (or a copy of it under another name): its modules are `managers.helpers` (or,
    # where the root is a package itself, `tree.managers.helpers`), its imports say `sglang.srt.managers.helpers`
    root = tmp_path.joinpath(*folders)
    (root / "managers").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    if package:
        (root / "__init__.py").write_text("")
    (root / "managers" / "__init__.py").write_text("")
    (root / "managers" / "helpers.py").write_text(
        "import torch\n\n\ndef upload(n):\n    return torch.tensor([n], device='cuda')\n")
    (root / "managers" / "runner.py").write_text(
        "import torch\nfrom sglang.srt.managers.helpers import upload\n\n\n"
        "class ModelRunner(torch.nn.Module):\n    def forward(self, n):\n        return upload(n)\n")
    result = CliRunner().invoke(main, ["check", str(root), "--output-format", "json", "--exit-zero", "--no-cache"],
                                catch_exceptions=False)
    assert by_file(json.loads(result.stdout)) == {"helpers.py": [(5, "HDL101")]}


HELPER_OF_A_CONSTRUCTOR = '''import torch
from torch import nn


class RippleNet(nn.Module):
    def __init__(self, users, device):
        super().__init__()
        self.device = device
        self.ripple_set = self._build_ripple_set(users)

    def _build_ripple_set(self, users):
        ripple_set = {}
        for user in users:
            ripple_set[user] = torch.LongTensor([0, 0]).to(self.device)
        return ripple_set
'''


@pytest.mark.parametrize(("extra", "reported"), [
    ("", False),  # only the module's constructor builds it: once per model, loop and all
    ("\n    def forward(self, users):\n        return self._build_ripple_set(users)\n", True),  # every step too
])
def test_a_loop_in_a_helper_only_a_module_constructor_calls_runs_once(tmp_path, extra, reported):
    make_project(tmp_path, model=HELPER_OF_A_CONSTRUCTOR + extra)
    assert ((14, "HDL102") in by_file(check(tmp_path)).get("model.py", [])) is reported


HELPER_OF_AN_OPTIMIZER = '''import torch


class Reference(torch.optim.Optimizer):
    def __init__(self, params, device):
        super().__init__(params, {})
        self.device = device
        self.model_ref = self._init_model_ref(params)
        self.scales = []
        for group in list(params):
            self.scales.append(torch.ones(len(group["params"])).to(device))

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.model_ref = self._init_model_ref(self.param_groups[0]["params"])

    def _init_model_ref(self, params):
        refs = []
        for p in params:
            refs.append(torch.empty(p.shape).normal_().to(self.device))
        return refs


def fit(model, batches):
    optimizer = Reference(model.parameters(), "cuda")
    for batch in batches:
        model(batch).sum().backward()
        optimizer.step()
'''


@pytest.mark.parametrize(("base", "extra", "reported"), [
    # an optimizer is built once per training run (and loaded once): its set-up loops run once
    ("torch.optim.Optimizer", "", set()),
    ("torch.optim.AdamW", "", set()),
    # a class of no such kind may be built every step; a helper `step` calls runs every step
    ("object", "", {(11, "HDL102"), (20, "HDL102")}),
    ("torch.optim.Optimizer", "\n\ndef refresh(optimizer, params):\n    for step in range(10):\n"
     "        optimizer.model_ref = optimizer._init_model_ref(params)\n", {(20, "HDL102")}),
])
def test_the_set_up_of_an_optimizer_runs_once(tmp_path, base, extra, reported):
    make_project(tmp_path, model=HELPER_OF_AN_OPTIMIZER.replace("torch.optim.Optimizer", base) + extra)
    assert set(by_file(check(tmp_path)).get("model.py", [])) == reported


HOOK_OF_A_CONSTRUCTOR = '''import torch
from torch import nn


class Shifted(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device

        def hook(module, inputs):
            return self._shift(inputs)
        self.register_forward_pre_hook(hook)

    def _shift(self, inputs):
        out = []
        for x in inputs:
            out.append(x + torch.FloatTensor([1.0]).to(self.device))
        return out
'''


@pytest.mark.parametrize("setup", [
    # a closure called where it is defined, and a nested function's defaults, run with the constructor
    "        def make(s):\n            return self._build(s)\n        self.tables = [make(s) for s in sizes]\n",
    "        def hook(module, inputs, table=self._build(sizes)):\n            return inputs\n"
    "        self.register_forward_pre_hook(hook)\n",
])
def test_a_helper_a_constructor_calls_from_a_closure_it_runs_at_once_runs_once(tmp_path, setup):
    model = ("import torch\nfrom torch import nn\n\n\nclass Tables(nn.Module):\n    def __init__(self, sizes, device):\n"
             "        super().__init__()\n        self.device = device\n" + setup +
             "\n    def _build(self, sizes):\n        out = []\n        for s in sizes:\n"
             "            out.append(torch.FloatTensor([s]).to(self.device))\n        return out\n")
    make_project(tmp_path, model=model)
    assert not [code for _, code in by_file(check(tmp_path)).get("model.py", []) if code == "HDL102"]


def test_a_helper_a_constructor_calls_from_a_hook_it_registers_runs_when_the_hook_does(tmp_path):
    # The hook is defined in the constructor but runs before every `forward`: its calls are not the constructor's.
    make_project(tmp_path, model=HOOK_OF_A_CONSTRUCTOR)
    assert (17, "HDL102") in by_file(check(tmp_path)).get("model.py", [])


SYNC_IN_A_HELPER_OF_A_CONSTRUCTOR = '''import torch
from torch import nn


class Router(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.offsets = self._build_offsets(sizes)

    def _build_offsets(self, sizes):
        counts = torch.cumsum(torch.tensor(sizes, device="cuda"), 0)
        offsets = []
        for i in range(len(sizes)):
            offsets.append(counts[i].item())
        return offsets
'''


@pytest.mark.parametrize(("extra", "reported"), [
    ("", False),  # the sync rules read it as the copy rules do: once per model
    ("\n    def forward(self, sizes):\n        return self._build_offsets(sizes)\n", True),
])
def test_a_sync_in_a_loop_of_a_helper_only_a_module_constructor_calls_runs_once(tmp_path, extra, reported):
    make_project(tmp_path, model=SYNC_IN_A_HELPER_OF_A_CONSTRUCTOR + extra)
    assert ((14, "HDL201") in by_file(check(tmp_path)).get("model.py", [])) is reported


ASYNC_BATCH = '''\
import torch
from dataclasses import dataclass


@dataclass
class Batch:
    tokens: list
    sampling: "Sampling" = None
    device: str = "cuda"

    def upload(self, ids):
        self.ids = ids.to(self.device, non_blocking=True)


@dataclass
class Sampling:
    top_ps: torch.Tensor

    @classmethod
    def from_batch(cls, batch: Batch, top_p):
        top_ps = torch.tensor(top_p, dtype=torch.float, device=batch.device)
        return cls(top_ps=top_ps)
'''
ASYNC_VERIFY = '''\
import copy

import torch

from pkg.batch import Batch


class Verifier(torch.nn.Module):
    def forward(self, batch: Batch, probs):
        sampling = batch.sampling
        if len(probs) != 1:
            sampling = copy.deepcopy(sampling)
        if not torch.all(sampling.top_ps == 1.0):
            probs = probs / 2
        return probs
'''


@pytest.mark.parametrize("edits, reported", [
    ([], [(13, "HDL203")]),
    ([("ids.to(self.device, non_blocking=True)", "ids.to(self.device)")], []),
    # Offloading code copies back to the host with `non_blocking=True` too: a host device by its name.
    ([("    device: str", "    offload_device: str"), ("self.device", "self.offload_device"),
      ("batch.device", "batch.offload_device")], []),
    # Some assignment may make it the host's.
    ([("        self.ids = ids", "        self.device = 'cuda' if ids.is_cuda else 'cpu'\n        self.ids = ids")], []),
])
def test_a_device_copied_to_asynchronously_places_what_is_made_on_it(tmp_path, edits, reported):
    # sglang's `ScheduleBatch.device` (a field, default "cuda", assigned an unknown device) is where the batch
    # copies with `non_blocking=True`: a GPU device, so `SamplingBatchInfo.top_ps`, made on it in another class,
    # is on the GPU, and so is the `top_ps` of a local bound to `batch.sampling_info` (or a deep copy of it).
    batch = ASYNC_BATCH
    for old, new in edits:
        batch = batch.replace(old, new)
    make_project(tmp_path, batch=batch, verify=ASYNC_VERIFY)
    assert by_file(check(tmp_path)).get("verify.py", []) == reported


@pytest.mark.parametrize("edit", [
    # The function stores into the local's attribute: what it stores is the file's to tell.
    ("        if not torch.all", "        sampling.top_ps = sampling.top_ps.cpu()\n        if not torch.all"),
    # Bound to objects of two classes.
    ("            sampling = copy.deepcopy(sampling)", "            sampling = batch"),
])
def test_a_local_receiver_of_unknown_or_changed_class_places_nothing(tmp_path, edit):
    make_project(tmp_path, batch=ASYNC_BATCH, verify=ASYNC_VERIFY.replace(*edit))
    assert check(tmp_path) == []


def test_dropping_the_asynchronous_copy_in_one_file_drops_the_finding_in_another_through_the_cache(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, batch=ASYNC_BATCH, verify=ASYNC_VERIFY)
    assert by_file(check(tmp_path, cache=True)) == {"verify.py": [(13, "HDL203")]}
    batch = tmp_path / "pkg" / "batch.py"
    batch.write_text(ASYNC_BATCH.replace("ids.to(self.device, non_blocking=True)", "ids.to(self.device)"))
    assert check(tmp_path, cache=True) == []


@pytest.mark.parametrize("returned, reported", [
    ("self.proj.weight.device", [(8, "HDL203")]),  # sglang's vision models: says nothing more
    ('torch.device("cpu")', []),
])
def test_a_device_property_copied_to_asynchronously_is_the_gpu_unless_it_returns_the_host(tmp_path, returned,
                                                                                           reported):
    batch = ("import torch\n\n\nclass Batch:\n    @property\n    def device(self):\n"
             f"        return {returned}\n\n    def upload(self, ids):\n"
             "        return ids.to(self.device, non_blocking=True)\n")
    run = ("import torch\nfrom pkg.batch import Batch\n\n\ndef step(batch: Batch, probs, n):\n"
           "    for _ in range(n):\n        t = torch.ones(3, device=batch.device)\n"
           "        if torch.all(t == 1.0):\n            probs = probs / 2\n    return probs\n")
    make_project(tmp_path, batch=batch, run=run)
    assert by_file(check(tmp_path)).get("run.py", []) == reported


ASYNC_LOCAL = '''\
import torch


def step(ids, lens, device, n):
    for _ in range(n):
        ids_gpu = ids.to(device, non_blocking=True)
        total = torch.tensor(lens, device=device)
        if total.sum() > 0:
            n -= 1
    return ids_gpu
'''


@pytest.mark.parametrize("edits, reported", [
    ([], [(7, "HDL101"), (8, "HDL203")]),
    # The host's by a default, or by a name: offloading copies back with `non_blocking=True` too.
    ([("device, n)", "n, device='cpu')")], [(7, "HDL101")]),
    ([("device, n)", "offload_device, n)"), ("ids.to(device", "ids.to(offload_device"),
      ("device=device", "device=offload_device")], [(7, "HDL101")]),
    ([("def step(", "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\ndef step("),
      ("device, n)", "n)")], [(10, "HDL101")]),
    # Rebound after the copy: another device.
    ([("        total =", "        device = pick()\n        total =")], [(8, "HDL101")]),
])
def test_a_device_a_function_copies_to_asynchronously_is_the_gpu(tmp_path, edits, reported):
    source = ASYNC_LOCAL
    for old, new in edits:
        source = source.replace(old, new)
    make_project(tmp_path, step=source)
    assert by_file(check(tmp_path)).get("step.py", []) == reported


@pytest.mark.parametrize("source", [
    # The host's default of the function that binds the name, read in a nested one.
    "import torch\n\n\ndef step(ids, lens, n, device='cpu'):\n    def total(values):\n"
    "        return torch.tensor(values, device=device)\n    for _ in range(n):\n"
    "        ids = ids.to(device, non_blocking=True)\n        if total(lens).sum() > 0:\n            n -= 1\n",
    # The copy in the other arm of the `if`.
    "import torch\n\n\ndef step(ids, lens, device, n):\n    for _ in range(n):\n"
    "        if device.type == 'cuda':\n            ids = ids.to(device, non_blocking=True)\n        else:\n"
    "            t = torch.tensor(lens, device=device)\n            if t.sum() > 0:\n                n -= 1\n",
    # A loop over devices, the host's among them.
    "import torch\n\n\ndef step(ids, lens):\n    for device in ['cpu', 'cuda']:\n"
    "        ids = ids.to(device, non_blocking=True)\n        t = torch.tensor(lens, device=device)\n"
    "        if t.sum() > 0:\n            break\n",
    # A file for another accelerator: its devices are that accelerator's.
    "import torch\n\n\ndef step(ids, lens, device, n):\n    torch.npu.set_device(device)\n    for _ in range(n):\n"
    "        ids = ids.to(device, non_blocking=True)\n        t = torch.tensor(lens, device=device)\n"
    "        if t.sum() > 0:\n            n -= 1\n",
])
def test_a_device_copied_to_asynchronously_that_may_be_another_says_nothing(tmp_path, source):
    make_project(tmp_path, step=source)
    assert "HDL203" not in [code for _, code in by_file(check(tmp_path)).get("step.py", [])]


def test_the_word_test_admits_a_file_whose_only_gpu_evidence_is_an_asynchronous_copy(tmp_path):
    make_project(tmp_path, step=ASYNC_LOCAL.replace("ids_gpu", "ids_d"))
    (tmp_path / "pyproject.toml").write_text("[tool.h2dlint]\nproject-model = false\n")
    assert (8, "HDL203") in by_file(check(tmp_path))["step.py"]


@pytest.mark.parametrize("source", [
    "import torch\n\n\nclass Batch:\n    def __init__(self, device):\n        self.device = device\n\n"
    "    def step(self, n):\n        for _ in range(n):\n"
    "            t = torch.tensor([1, 2]).to(self.device, non_blocking=True)\n            if t.sum() > 0:\n"
    "                n -= 1\n",
    "import torch\n\n\ndef step(device, n):\n    for _ in range(n):\n"
    "        t = torch.tensor([1, 2]).to(device, non_blocking=True)\n        if t.sum() > 0:\n            n -= 1\n",
])
def test_a_device_known_only_by_an_asynchronous_copy_is_no_certain_cuda_device_for_fixes(tmp_path, source):
    # Its tensors are on the GPU for the sync rules, but `pin_memory=True` would raise on a build without CUDA:
    # the pinned rewrite keeps its guard.
    make_project(tmp_path, step=source)
    findings = check(tmp_path)
    assert "HDL203" in [finding["code"] for finding in findings]
    rewrite = next(finding for finding in findings if finding["code"] == "HDL104")["fix"]["edits"][0]["content"]
    assert "pin_memory=torch.cuda.is_available()" in rewrite


@pytest.mark.parametrize(("call", "hot"), [
    ("batch.filter_batch(ids)", True),
    ("batch.filter_batch(new_indices=ids)", True),
    # Arguments `Draft.filter_batch` cannot take: the call is of `Batch.filter_batch`, however the receiver is unknown.
    ("batch.filter_batch(reqs=ids)", False),
    ("batch.filter_batch()", False),
    ("batch.filter_batch(ids, ids, ids, ids)", False),
    # The receiver may be the class, the object passed first.
    ("type(batch).filter_batch(batch, ids, ids)", True),
])
def test_a_call_by_a_method_name_runs_only_methods_that_take_its_arguments(tmp_path, call, hot):
    code = ("from torch import nn\n\n\nclass Draft:\n    def filter_batch(self, new_indices, new_indices_cpu=None):\n"
            "        return new_indices.cuda().cpu()\n\n\nclass Batch:\n    def filter_batch(self, reqs=None):\n"
            "        return reqs\n\n\nclass Model(nn.Module):\n    def forward(self, batch, ids):\n"
            f"        return {call}\n")
    make_project(tmp_path, spec=code)
    assert (by_file(check(tmp_path)).get("spec.py", []) == [(6, "HDL201")]) is hot


@pytest.mark.parametrize("definition", [
    # Bound again in the class body, or defined twice: what a call takes is not what one `def` says.
    "    def filter_batch(new_indices, new_indices_cpu=None):\n        return new_indices.cuda().cpu()\n\n"
    "    filter_batch = staticmethod(filter_batch)\n",
    "    if sys.version_info >= (3, 10):\n        def filter_batch(self, new_indices, new_indices_cpu):\n"
    "            return new_indices.cuda().cpu()\n    else:\n        def filter_batch(self, new_indices):\n"
    "            return new_indices.cuda().cpu()\n",
])
def test_a_method_bound_twice_in_its_class_takes_any_call_of_its_name(tmp_path, definition):
    code = ("import sys\n\nfrom torch import nn\n\n\nclass Draft:\n" + definition + "\n\nclass Batch:\n"
            "    def filter_batch(self, reqs=None):\n        return reqs\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, batch, ids):\n        return batch.filter_batch(ids, ids)\n")
    make_project(tmp_path, spec=code)
    assert {code for _, code in by_file(check(tmp_path))["spec.py"]} == {"HDL201"}


@pytest.mark.parametrize(("call", "placed"), [
    ("batch.make_ids(n=n)", True),  # only `Draft.make_ids` takes `n`: its result is on the GPU
    ("batch.make_ids()", False),  # only `Batch.make_ids`: on the host
    ("batch.make_ids(*args)", False),  # either: the results disagree
])
def test_a_call_result_comes_only_from_methods_that_take_its_arguments(tmp_path, call, placed):
    code = ("import torch\nfrom torch import nn\n\n\nclass Draft:\n    def make_ids(self, n):\n"
            "        return torch.arange(n, device=\"cuda\")\n\n\nclass Batch:\n    def make_ids(self):\n"
            "        return torch.arange(3)\n\n\nclass Model(nn.Module):\n    def forward(self, batch, n, *args):\n"
            f"        ids = {call}\n        return ids.tolist()\n")
    make_project(tmp_path, spec=code)
    assert ((18, "HDL201") in by_file(check(tmp_path)).get("spec.py", [])) is placed


@pytest.mark.parametrize(("call", "rewritten"), [
    ("factory.make_model(sizes, device)", False),  # `Factory.make_model`: the model is built under the context
    ("factory.make_model()", True),  # only `Other.make_model` takes no arguments: `Model` is built elsewhere
])
def test_a_device_context_reaches_only_methods_that_take_the_call_arguments(tmp_path, call, rewritten):
    model = ("import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, sizes, device):\n"
             "        super().__init__()\n        self.build(sizes, device)\n\n"
             "    def build(self, sizes, device):\n        self.offsets = torch.tensor(sizes, device=device)\n\n"
             "    def forward(self, sizes, device):\n        self.build(sizes, device)\n\n\n"
             "class Factory:\n    def make_model(self, sizes, device):\n        return Model(sizes, device)\n\n\n"
             "class Other:\n    def make_model(self):\n        return None\n")
    loader = ("import torch\n\n\ndef make(factory, sizes, device):\n    with torch.device(device):\n"
              f"        return {call}\n")
    make_project(tmp_path, model=model, loader=loader)
    findings = check(tmp_path, "--unsafe-fixes")
    assert [(f["code"], f["fix"] is not None) for f in findings] == [("HDL101", rewritten)]


def test_a_call_result_typed_through_another_call_is_not_placed_by_a_call_of_the_same_name(tmp_path):
    # `self.batch_of().make_ids()` (a call on a typed call's result) and `MAKERS[0]().make_ids(n=n)` (on an object of
    # unknown class) are two calls by one name: which arguments are `ids`'s cannot be told from the name alone.
    code = ("import torch\nfrom torch import nn\n\n\nclass Draft:\n    def make_ids(self, n):\n"
            "        return torch.arange(n, device=\"cuda\")\n\n\nclass Batch:\n    def make_ids(self):\n"
            "        return torch.arange(3)\n\n\nMAKERS = [Draft]\n\n\nclass Model(nn.Module):\n"
            "    def batch_of(self) -> Batch:\n        return Batch()\n\n    def forward(self, n):\n"
            "        other = MAKERS[0]().make_ids(n=n)\n        ids = self.batch_of().make_ids()\n"
            "        return ids.tolist(), other\n")
    make_project(tmp_path, spec=code)
    assert by_file(check(tmp_path, "--select", "ALL")) == {"spec.py": [(25, "HDL202")]}


@pytest.mark.parametrize(("files", "callee"), [
    # Imported under a new name twice: the call `y(...)` runs `z`.
    ({"__init__": "from .a import x as y\n", "a": "from .b import z as x\n",
      "b": "def z(v):\n    return v.tolist()\n",
      "model": "from torch import nn\n\nfrom pkg import y\n\n\nclass Model(nn.Module):\n"
               "    def forward(self, v):\n        return y(v.cuda())\n"}, "b.py"),
    # Held as a subclass that inherits the `forward`: `self.visual(...)` runs `Base.forward`.
    ({"mods": "from torch import nn\n\n\nclass Base(nn.Module):\n    def forward(self, v):\n        return v.tolist()\n\n\n"
              "class Sub(Base):\n    pass\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.visual = Sub()\n\n    def forward(self, v):\n"
              "        return self.visual(v.cuda())\n"}, "mods.py"),
])
def test_a_parameter_is_placed_by_callers_the_model_finds_however_the_call_is_written(tmp_path, files, callee):
    make_project(tmp_path, **files)
    assert [code for _, code in by_file(check(tmp_path, "--select", "ALL")).get(callee, [])] == ["HDL201"]


PENALTIES = '''
import torch


def clear_rows(rows: torch.Tensor, counts: torch.Tensor) -> None:
    counts[rows] = 0
'''

SAMPLER = '''
import torch
from pkg.penalties import clear_rows


class Sampler:
    def __init__(self, n):
        self.counts = torch.zeros(n, 64, device="cuda")

    def forward(self, new_rows, done):
        {call}
'''


def test_an_index_every_caller_passes_as_integers_writes_through_index_put(tmp_path):
    # `counts[rows] = 0` with `rows` a tensor of integers is `index_put_`, which copies the 0 to the device first; the
    # project model tells, from the calls in another file, that `rows` holds integers and no boolean mask.
    upload = ("rows = torch.tensor(new_rows, dtype=torch.int64, pin_memory=True)\n"
              "        clear_rows(rows.to('cuda', non_blocking=True), self.counts)")
    make_project(tmp_path, penalties=PENALTIES, sampler=SAMPLER.format(call=upload))
    findings = check(tmp_path)
    assert by_file(findings) == {"penalties.py": [(6, "HDL106")]}
    assert "through an index tensor" in findings[0]["message"]
    assert "hot: Sampler.forward -> clear_rows" in findings[0]["message"]


def test_an_index_some_caller_passes_as_a_mask_is_not_known_to_write_through_index_put(tmp_path):
    # A boolean mask makes the same write `masked_fill_`, which copies nothing: one such call keeps it unreported.
    calls = ("rows = torch.arange(4, device='cuda')\n        clear_rows(rows, self.counts)\n"
             "        clear_rows(done > 0, self.counts)")
    make_project(tmp_path, penalties=PENALTIES, sampler=SAMPLER.format(call=calls))
    assert check(tmp_path) == []
    calls = calls.replace("done > 0", "rows + 1")
    (tmp_path / "pkg" / "sampler.py").write_text(SAMPLER.format(call=calls))
    assert by_file(check(tmp_path)) == {"penalties.py": [(6, "HDL106")]}


def test_a_modules_forward_is_called_through_call_with_what_the_model_cannot_see(tmp_path):
    # `self.clear(rows)` passes integers, but `nn.Sequential(Clear())(x > 0)` runs the same `forward` with a mask.
    clear = ("import torch\nfrom torch import nn\n\n\nclass Clear(nn.Module):\n    def __init__(self):\n"
             "        super().__init__()\n        self.counts = torch.zeros(8, device='cuda')\n\n"
             "    def forward(self, rows):\n        self.counts[rows] = 0\n\n\n"
             "class Runner(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.clear = Clear()\n\n"
             "    def forward(self, x):\n        self.clear(torch.arange(4, device='cuda'))\n")
    make_project(tmp_path, clear=clear)
    assert check(tmp_path) == []


# Two classes with a method of the same name, each with a read at a line of its own (6 and 11).
TWO_HEADS = '''\
from torch import nn


class MarkovHead:
    def next_state(self, hidden):
        return hidden.cuda().cpu()


class Manager:
    def next_state(self, paths=None):
        return paths.cuda().cpu()
'''
PASSED_HEADS = TWO_HEADS + '''

def draft_block(*, head, hidden):
    return head.next_state(hidden)


class Drafter(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = MarkovHead()

    def forward(self, hidden):
        return {call}
'''
SAMPLE_BLOCK = "\n\ndef sample_block(head, hidden):\n    return draft_block(head=head, hidden=hidden)\n"


@pytest.mark.parametrize(("call", "extra", "reported"), [
    # Every call passes a `MarkovHead` (directly, or through another parameter): `head.next_state` runs its
    # method, not the unrelated `Manager.next_state`, which only the method's name would have taken.
    ("draft_block(head=self.head, hidden=hidden)", "", [(6, "HDL201")]),
    ("sample_block(self.head, hidden)", SAMPLE_BLOCK, [(6, "HDL201")]),
    ("draft_block(head=MarkovHead(), hidden=hidden)", "", [(6, "HDL201")]),
    # What a call passes has no class the model knows, or comes from a parameter no call of the project fills
    # (`sample_block`, API): any method of that name may run.
    ("draft_block(head=hidden.head, hidden=hidden)", "", [(6, "HDL201"), (11, "HDL201")]),
    ("draft_block(head=self.head, hidden=hidden)", SAMPLE_BLOCK, [(6, "HDL201"), (11, "HDL201")]),
])
def test_a_method_called_on_a_parameter_runs_on_the_class_every_call_passes(tmp_path, call, extra, reported):
    make_project(tmp_path, heads=PASSED_HEADS.replace("{call}", call) + extra)
    assert by_file(check(tmp_path)).get("heads.py", []) == reported


@pytest.mark.parametrize("rest", [
    # A module's `forward` also runs through `__call__`, which no call the model resolves shows: `layer(x, ...)`.
    "\n\nclass Block(nn.Module):\n    def forward(self, x, head):\n        return head.next_state(x)\n\n\n"
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.first = Block()\n"
    "        self.layers = nn.ModuleList([Block()])\n        self.head = MarkovHead()\n\n"
    "    def forward(self, x):\n        x = self.first(x, self.head)\n        for layer in self.layers:\n"
    "            x = layer(x, Manager())\n        return x\n",
    # The `head` a nested function is passed is its own parameter, not the outer one.
    "\n\ndef draft(head, hidden):\n    def step(head):\n        return head.next_state(hidden)\n"
    "    return step(Manager())\n\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.head = MarkovHead()\n\n    def forward(self, hidden):\n        return draft(self.head, hidden)\n",
    # An element of a container is no object of the container's class.
    "\n\nclass Stack:\n    def __init__(self):\n        self.items = [Manager()]\n\n    def __getitem__(self, i):\n"
    "        return self.items[i]\n\n\ndef draft(head, hidden):\n    return head.next_state(hidden)\n\n\n"
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.stack = Stack()\n\n"
    "    def forward(self, hidden):\n        return draft(self.stack[0], hidden)\n",
])
def test_a_parameter_whose_objects_the_calls_do_not_all_show_keeps_every_method_of_the_name(tmp_path, rest):
    make_project(tmp_path, heads=TWO_HEADS + rest)
    assert by_file(check(tmp_path)).get("heads.py", []) == [(6, "HDL201"), (11, "HDL201")]


ON_A_CLASS = (
    "\n\nclass Base:\n    def run_head(self, head, hidden):\n        return head.next_state(hidden)\n\n\n"
    "class Sub(Base):\n    pass\n\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.sub = Sub()\n        self.manager = Manager()\n\n    def forward(self, hidden):\n"
    "        sub = self.sub\n        return {call}\n")


@pytest.mark.parametrize("call", [
    "Sub.run_head(sub, self.manager, hidden)",  # a method `Sub` inherits
    "type(sub).run_head(sub, self.manager, hidden)",
    "sub.__class__.run_head(sub, self.manager, hidden)",
    "self.sub.__class__.run_head(self.sub, self.manager, hidden)",
])
def test_a_method_called_on_a_class_takes_the_object_first(tmp_path, call):
    # The head is the second argument, a `Manager`: only its `next_state` runs.
    make_project(tmp_path, heads=TWO_HEADS + ON_A_CLASS.replace("{call}", call))
    assert by_file(check(tmp_path)).get("heads.py", []) == [(11, "HDL201")]


@pytest.mark.parametrize("imported", ["", "from .base import Sub", "import pkg.base"])
def test_an_inherited_method_called_on_a_subclass_is_hot(tmp_path, imported):
    # `Sub.compute(self, x)` runs `Base.compute`: found on the class, not by the method's name (which takes only
    # names like `run_head`), whether `Sub` is defined in the module, imported, or named by its module's path.
    base = "class Base:\n    def compute(self, x):\n        return x.cuda().sum().item()\n\n\nclass Sub(Base):\n    pass\n"
    model = ("from torch import nn\n{head}\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
             "        return Sub.compute(self, x)\n")
    if imported:
        model = model.replace("{head}", imported + "\n")
        if imported.startswith("import"):
            model = model.replace("Sub.compute", "pkg.base.Sub.compute")
        make_project(tmp_path, base=base, model=model)
        assert by_file(check(tmp_path)) == {"base.py": [(3, "HDL201")]}
    else:
        make_project(tmp_path, model=model.replace("{head}", "\n\n" + base))
        assert by_file(check(tmp_path)) == {"model.py": [(6, "HDL201")]}


def test_a_parameter_passed_objects_whose_mixin_overrides_the_base_keeps_the_mixins_method(tmp_path):
    # `A(Mixin, Base)` runs `Mixin.next_state`: the classes' common base, `Base`, does not reach it.
    code = ("from torch import nn\n\n\nclass Base:\n    def next_state(self, hidden):\n        return hidden\n\n\n"
            "class Mixin:\n    def next_state(self, hidden):\n        return hidden.cuda().cpu()\n\n\n"
            "class A(Mixin, Base):\n    pass\n\n\nclass B(Base):\n    pass\n\n\n"
            "def draft(head, hidden):\n    return head.next_state(hidden)\n\n\n"
            "class Model(nn.Module):\n    def forward(self, hidden):\n        return draft(A(), hidden), draft(B(), hidden)\n")
    make_project(tmp_path, heads=code)
    assert by_file(check(tmp_path)).get("heads.py", []) == [(11, "HDL201")]


def test_a_method_only_a_typed_parameter_reached_by_its_name_is_called_by_nothing(tmp_path):
    # Once `head` is typed, no call runs `Manager.next_state`: nothing in the project calls it, so its copy, with
    # `copies-outside-hot-code` on, is not reported. (Typing `paths` asks who calls it while no parameter is typed
    # yet; what was found then is not kept.)
    code = ("import torch\nfrom torch import nn\n\n\nclass MarkovHead:\n    def next_state(self, hidden):\n"
            "        return hidden + 1\n\n\nclass Manager:\n    def next_state(self, paths):\n        paths.pick_ids()\n"
            "        return torch.tensor([1, 2], device=\"cuda\")\n\n\ndef draft_block(head, hidden):\n"
            "    return head.next_state(hidden)\n\n\nclass Drafter(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.head = MarkovHead()\n\n    def forward(self, hidden):\n"
            "        return draft_block(self.head, hidden)\n")
    make_project(tmp_path, copies_anywhere=True, heads=code, user="from pkg.heads import Drafter\n")
    assert by_file(check(tmp_path)).get("heads.py", []) == []
    (tmp_path / "pkg" / "heads.py").write_text(code.replace("self.head = MarkovHead()", "self.head = Manager()"))
    assert by_file(check(tmp_path)).get("heads.py", []) == [(13, "HDL101")]


def test_a_parameter_passed_on_is_typed_by_its_own_calls_not_by_a_nested_functions_local(tmp_path):
    # `run` passes its own `head` (a `MarkovHead`) to `draft`; the `head` its nested `fallback` binds is another name.
    rest = ("\n\ndef draft(head, hidden):\n    return head.next_state(hidden)\n\n\ndef run(head, hidden):\n"
            "    def fallback():\n        head = Manager()\n        return head\n\n    return draft(head, hidden), fallback\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = MarkovHead()\n\n"
            "    def forward(self, hidden):\n        return run(self.head, hidden)\n")
    make_project(tmp_path, heads=TWO_HEADS + rest)
    assert by_file(check(tmp_path)).get("heads.py", []) == [(6, "HDL201")]


def test_classes_sharing_a_mixin_reach_the_method_of_the_base_after_it(tmp_path):
    # The common base of `A(Mixin, Base)` and `B(Mixin, Base)` is `Mixin`, which has no `next_state`: `Base`'s runs.
    code = ("from torch import nn\n\n\nclass Base:\n    def next_state(self, hidden):\n        return hidden.cuda().cpu()\n\n\n"
            "class Mixin:\n    pass\n\n\nclass A(Mixin, Base):\n    pass\n\n\nclass B(Mixin, Base):\n    pass\n\n\n"
            "def draft(head, hidden):\n    return head.next_state(hidden)\n\n\n"
            "class Model(nn.Module):\n    def forward(self, hidden):\n        return draft(A(), hidden), draft(B(), hidden)\n")
    make_project(tmp_path, heads=code)
    assert by_file(check(tmp_path)).get("heads.py", []) == [(6, "HDL201")]


def test_a_tensor_passed_to_a_method_called_on_its_class_is_placed_by_its_position(tmp_path):
    # `t` is the third argument of `Sub.read_value(self, 2.0, x.cuda())`, the object coming first: on the GPU.
    make_project(tmp_path, model=(
        "from torch import nn\n\n\nclass Base:\n    def read_value(self, scale, t):\n"
        "        return t.item() * scale\n\n\nclass Sub(Base):\n    pass\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return Sub.read_value(self, 2.0, x.cuda())\n"))
    findings = check(tmp_path)
    assert by_file(findings) == {"model.py": [(6, "HDL201")]}
    assert "Model.forward -> Base.read_value" in findings[0]["message"]


HELD_HEADS = TWO_HEADS + '''

def draft_block(*, head, hidden):
    return head.next_state(hidden)


class Holder:
    def __init__(self):
        self.head = MarkovHead()


class Drafter(nn.Module):
    def __init__(self):
        super().__init__()
        self.holder = Holder()

    def forward(self, hidden):
        {call}
'''


@pytest.mark.parametrize("call", [
    "return self.holder.head.next_state(hidden)",
    "head = self.holder.head\n        return head.next_state(hidden)",
    "return draft_block(head=self.holder.head, hidden=hidden)",
])
def test_a_method_called_on_an_attribute_of_an_attribute_runs_on_its_class(tmp_path, call):
    # `self.holder.head` is the `MarkovHead` that `Holder` makes: the unrelated `Manager.next_state` does not run.
    make_project(tmp_path, heads=HELD_HEADS.replace("{call}", call))
    assert by_file(check(tmp_path)).get("heads.py", []) == [(6, "HDL201")]


@pytest.mark.parametrize(("holders", "built"), [
    # Another object stores a `Manager` into the holder's `head`.
    ("", "self.holder = Holder()\n        self.holder.head = Manager()"),
    # A subclass of the holder gives `head` another class.
    ("\n\nclass ManagedHolder(Holder):\n    def __init__(self):\n        super().__init__()\n"
     "        self.head = Manager()\n", "self.holder = holder"),
])
def test_an_attribute_of_an_attribute_whose_class_may_differ_keeps_every_method_of_the_name(tmp_path, holders,
                                                                                          built):
    text = HELD_HEADS.replace("{call}", "return self.holder.head.next_state(hidden)") + holders
    text = text.replace("def __init__(self):\n        super().__init__()\n        self.holder = Holder()",
                        f"def __init__(self, holder: Holder):\n        super().__init__()\n        {built}")
    make_project(tmp_path, heads=text)
    assert by_file(check(tmp_path)).get("heads.py", []) == [(6, "HDL201"), (11, "HDL201")]


def test_a_method_of_an_attribute_of_an_objects_class_is_called_on_the_attribute(tmp_path):
    # `self.__class__.shared` is an object (a class attribute): `read_value` binds it, and `t` is `x.cuda()`.
    make_project(tmp_path, model=(
        "from torch import nn\n\n\nclass Store:\n    def read_value(self, t):\n        return t.item()\n\n\n"
        "class Model(nn.Module):\n    shared = Store()\n\n    def forward(self, x):\n"
        "        return self.__class__.shared.read_value(x.cuda())\n"))
    assert by_file(check(tmp_path)) == {"model.py": [(6, "HDL201")]}


def test_a_graph_replayed_through_an_attribute_of_an_attribute_makes_a_root(tmp_path):
    make_project(tmp_path, runner=(
        "import torch\n\n\nclass Holder:\n    def __init__(self):\n        self.graph = torch.cuda.CUDAGraph()\n\n\n"
        "class Runner:\n    def __init__(self):\n        self.holder = Holder()\n\n"
        "    def run_graph(self, x):\n        self.holder.graph.replay()\n        return x.cuda().item()\n"))
    findings = check(tmp_path)
    assert by_file(findings) == {"runner.py": [(15, "HDL201")]}
    assert "hot: Runner.run_graph)" in findings[0]["message"]  # a root itself: it replays a CUDA graph


def test_a_call_deep_in_an_imported_project_module_keeps_the_methods_of_its_name(tmp_path):
    # `config.runner.engine.run_encoder(n)`: the model follows no attribute of a module's object, so the call may
    # run any method of the name, as one on an object of unknown class; `np.random.default_rng()` runs none.
    make_project(tmp_path, handler=(
        "import torch\n\n\nclass Engine:\n    def run_encoder(self, n):\n        return torch.arange(n).cuda()\n"),
        config="from .handler import Engine\n\n\nclass Runner:\n    engine = Engine()\n\n\nrunner = Runner()\n",
        model=("import numpy as np\nfrom torch import nn\nfrom pkg import config\n\n\nclass Net(nn.Module):\n"
               "    def forward(self, x):\n        np.random.default_rng()\n"
               "        return config.runner.engine.run_encoder(x.shape[0])\n"))
    findings = check(tmp_path)
    assert by_file(findings) == {"handler.py": [(6, "HDL102")]}
    assert "hot: Net.forward -> Engine.run_encoder" in findings[0]["message"]


META = '''\
from dataclasses import dataclass

import torch


@dataclass
class SpecMeta:
    logits_indices: torch.Tensor
    num_tokens: int


def build_meta(n) -> SpecMeta:
    return SpecMeta(logits_indices=torch.arange(n, device="cuda"), num_tokens=n)
'''

META_RUNNER = '''\
import numpy as np
import torch

from pkg.meta import SpecMeta, build_meta


class Runner:
    def _spec_meta(self, n):
        return SpecMeta(logits_indices=torch.arange(n, device="cuda"), num_tokens=n)

    def execute_model(self, n):
        {bind}
        return meta.logits_indices[-1].item()
'''


@pytest.mark.parametrize("bind", [
    "meta = SpecMeta(logits_indices=torch.arange(n, device='cuda'), num_tokens=n)",
    "meta = self._spec_meta(n)",
    "meta = build_meta(n)",
    # `None` in the branch that reads no attribute of it
    "meta = None\n        if n > 1:\n            meta = self._spec_meta(n)",
])
def test_an_attribute_of_a_local_holding_a_project_object_is_placed_by_its_class(tmp_path, bind):
    # `meta` holds a `SpecMeta` (made here, by a method returning one, by a function annotated so): its
    # `logits_indices` is what the calls building a `SpecMeta` pass, on the GPU.
    make_project(tmp_path, meta=META, runner=META_RUNNER.replace("{bind}", bind))
    findings = check(tmp_path)
    assert by_file(findings) == {"runner.py": [(13 + bind.count("\n"), "HDL201")]}
    assert "`SpecMeta.logits_indices` (pkg.meta)" in findings[0]["message"]


def test_an_attribute_of_a_parameter_with_no_annotation_is_placed_by_the_class_its_calls_pass(tmp_path):
    # `use(meta)`: its one call passes a `SpecMeta`, so `meta.logits_indices` is the field that class places.
    runner = META_RUNNER.replace("{bind}", "meta = SpecMeta(logits_indices=torch.arange(n, device='cuda'), "
                                           "num_tokens=n)\n        return self.use(meta)\n\n"
                                           "    def use(self, meta):")
    make_project(tmp_path, meta=META, runner=runner)
    assert by_file(check(tmp_path)) == {"runner.py": [(16, "HDL201")]}
    # A second call passing a host tensor's holder: the calls disagree.
    other = "\n\nclass HostMeta:\n    def __init__(self, n):\n        self.logits_indices = torch.arange(n)\n"
    (tmp_path / "pkg" / "meta.py").write_text(META + other)
    (tmp_path / "pkg" / "runner.py").write_text(
        runner.replace("import SpecMeta,", "import HostMeta, SpecMeta,")
        + "\n    def warm_up(self, n):\n        return self.use(HostMeta(n))\n")
    assert by_file(check(tmp_path)) == {}


def test_an_attribute_of_a_local_that_may_hold_another_class_is_not_placed_by_one(tmp_path):
    other = "\n\nclass HostMeta:\n    def __init__(self, n):\n        self.logits_indices = torch.arange(n)\n"
    make_project(tmp_path, meta=META + other, runner=META_RUNNER.replace("import SpecMeta,", "import HostMeta, SpecMeta,")
                 .replace("{bind}", "meta = self._spec_meta(n)\n        if n > 8:\n            meta = HostMeta(n)"))
    assert by_file(check(tmp_path)) == {}


@pytest.mark.parametrize("bind", [
    # the second element of a function's result annotated `tuple[SpecMeta, HostMeta]`
    "_, meta = split(n)",
    # the name a handler binds
    "meta = SpecMeta(logits_indices=torch.arange(n, device='cuda'), num_tokens=n)\n        try:\n"
    "            n = n + 1\n        except HostMeta as meta:\n            return meta.logits_indices[-1].item()",
    # a nested function's parameter of the same name
    "meta = SpecMeta(logits_indices=torch.arange(n, device='cuda'), num_tokens=n)\n\n        def last(meta):\n"
    "            return meta.logits_indices[-1].item()\n\n        return last(HostMeta(n))",
])
def test_a_local_some_binding_gives_another_class_is_not_placed_by_one(tmp_path, bind):
    other = ("\n\nclass HostMeta(Exception):\n    def __init__(self, n):\n        self.logits_indices = torch.arange(n)\n"
             "\n\ndef split(n) -> tuple[SpecMeta, HostMeta]:\n    return build_meta(n), HostMeta(n)\n")
    runner = META_RUNNER.replace("import SpecMeta,", "import HostMeta, SpecMeta, split,").replace("{bind}", bind)
    make_project(tmp_path, meta=META + other, runner=runner)
    assert by_file(check(tmp_path, "--select", "HDL201")) == {}


def test_an_attribute_a_function_stores_into_its_local_is_not_placed_by_the_class(tmp_path):
    runner = META_RUNNER.replace("{bind}", "meta = build_meta(n)\n        meta.logits_indices = torch.arange(n)\n"
                                           "        return self._last(meta.logits_indices)\n\n"
                                           "    def _last(self, indices):\n        return indices[-1].item()\n")
    make_project(tmp_path, meta=META, runner=runner)
    assert by_file(check(tmp_path, "--select", "HDL201")) == {}


def test_a_parameter_passed_a_subclass_that_places_the_attribute_otherwise_is_not_placed(tmp_path):
    meta = ("import torch\n\n\nclass Meta:\n    def __init__(self, n):\n"
            "        self.logits_indices = torch.arange(n, device='cuda')\n\n\nclass HostMeta(Meta):\n"
            "    def __init__(self, n):\n        self.logits_indices = torch.arange(n)\n")
    runner = ("from pkg.meta import HostMeta, Meta\n\n\nclass Runner:\n    def use(self, meta):\n"
              "        return meta.logits_indices[-1].item()\n\n    def execute_model(self, n):\n"
              "        return self.use(Meta(n)), self.use(HostMeta(n))\n")
    make_project(tmp_path, meta=meta, runner=runner)
    assert by_file(check(tmp_path, "--select", "HDL201")) == {}


REBOUND = '''\
import numpy as np
import torch


class Runner:
    def __init__(self):
        self.query_start = torch.zeros(64, dtype=torch.int32, device="cuda")

    def _last_index(self, indices):
        return indices[-1].item()

    def execute_model(self, n, spec):
        {bind}
        return self._last_index(indices)
'''


@pytest.mark.parametrize(("bind", "found"), [
    # rebound to its upload: the call passes the upload
    ("indices = np.repeat(np.arange(n), 2)\n        indices = torch.from_numpy(indices).to('cuda', non_blocking=True)",
     [(10, "HDL201")]),
    # one value in each branch, both on the GPU
    ("if spec:\n            indices = torch.arange(n, device='cuda')\n        else:\n"
     "            indices = self.query_start[1:] - 1", [(10, "HDL201")]),
    # the upload may not have happened: host or GPU
    ("indices = np.repeat(np.arange(n), 2)\n        if spec:\n"
     "            indices = torch.from_numpy(indices).to('cuda', non_blocking=True)", []),
    # rebound to a host tensor before the call
    ("indices = torch.arange(n, device='cuda')\n        indices = torch.arange(n)", []),
    # a loop may bind it again after the read
    ("indices = torch.arange(n, device='cuda')\n        for _ in range(2):\n"
     "            self._last_index(indices)\n            indices = indices.tolist()", []),
    # a comprehension's own `indices`, and one binding it inside another name's assignment
    ("indices = torch.arange(n)\n        indices = indices.to('cuda')\n"
     "        return [self._last_index(indices) for indices in spec]", []),
    ("indices = torch.arange(n)\n        lengths = torch.tensor([len(indices) for indices in spec], device='cuda')\n"
     "        return self._last_index(indices), lengths", []),
    # read in `finally`: the handler may have bound it
    ("indices = torch.arange(n, device='cuda')\n        try:\n            n = n + 1\n        except RuntimeError:\n"
     "            indices = torch.arange(n)\n        finally:\n            self._last_index(indices)", []),
    # a nested function rebinds it (`nonlocal`)
    ("indices = torch.arange(n, device='cuda')\n\n        def to_host():\n            nonlocal indices\n"
     "            indices = torch.arange(n)\n\n        to_host()\n        return self._last_index(indices)", []),
    # two statements on one line: the read follows the second
    ("indices = torch.arange(n, device='cuda')\n        indices = torch.arange(n); self._last_index(indices)", []),
    # updated in place before the upload: `+=` keeps it where it is
    ("indices = np.arange(n)\n        indices += 1\n"
     "        indices = torch.from_numpy(indices).to('cuda', non_blocking=True)\n        self._last_index(indices)",
     [(10, "HDL201")]),
])
def test_a_name_rebound_passes_what_reaches_the_call(tmp_path, bind, found):
    make_project(tmp_path, runner=REBOUND.replace("{bind}", bind))
    assert by_file(check(tmp_path, "--select", "HDL201")).get("runner.py", []) == found


UNPACKED = '''\
import torch


class Runner:
    def __init__(self):
        self.query_start = torch.zeros(64, dtype=torch.int32, device="cuda")

    def _prepare_inputs(self, n):
        indices = self.query_start[1:] - 1
        return indices, torch.arange(n), n

    def _last_index(self, indices):
        return indices[-1].item()

    def execute_model(self, n):
        {use}
'''


@pytest.mark.parametrize(("use", "found"), [
    # passed on after unpacking: the callee reads the element the call returns first
    ("indices, positions, count = self._prepare_inputs(n)\n        return self._last_index(indices)",
     [(13, "HDL201")]),
    # read where it is unpacked, or taken by its index
    ("indices, positions, count = self._prepare_inputs(n)\n        return indices.sum().item()", [(17, "HDL201")]),
    ("return self._prepare_inputs(n)[0].sum().item()", [(16, "HDL201")]),
    # the second element is a host tensor
    ("indices, positions, count = self._prepare_inputs(n)\n        return self._last_index(positions)", []),
    ("indices, positions, count = self._prepare_inputs(n)\n        return positions.sum().item()", []),
])
def test_an_element_of_a_tuple_a_project_function_returns_is_placed_by_its_position(tmp_path, use, found):
    make_project(tmp_path, runner=UNPACKED.replace("{use}", use))
    assert by_file(check(tmp_path, "--select", "HDL201")).get("runner.py", []) == found


def test_a_change_to_what_a_function_returns_changes_the_elements_unpacked_in_another_file(tmp_path, monkeypatch):
    # runner.py names no device: only the model says that `indices` is on the GPU, and the cache must ask again.
    monkeypatch.chdir(tmp_path)
    prep = "import torch\n\n\ndef prepare_inputs(n):\n    return torch.arange(n, device='cuda'), n\n"
    runner = ("from pkg.prep import prepare_inputs\n\n\nclass Runner:\n    def execute_model(self, n):\n"
              "        indices, count = prepare_inputs(n)\n        return indices.sum().item()\n")
    make_project(tmp_path, prep=prep, runner=runner)
    assert by_file(check(tmp_path, cache=True)) == {"runner.py": [(7, "HDL201")]}
    (tmp_path / "pkg" / "prep.py").write_text(prep.replace(", device='cuda'", ""))
    assert check(tmp_path, cache=True) == []
    (tmp_path / "pkg" / "prep.py").write_text(prep)
    assert by_file(check(tmp_path, cache=True)) == {"runner.py": [(7, "HDL201")]}


def test_an_element_of_a_function_returning_other_values_too_is_not_placed(tmp_path):
    # One `return` gives a list the model does not follow: the first element may be anything. The file is still
    # checked (the read of a tensor made on the GPU is reported).
    runner = UNPACKED.replace("        return indices, torch.arange(n), n\n",
                              "        if n > 8:\n            return [n]\n"
                              "        return indices, torch.arange(n), n\n")
    make_project(tmp_path, runner=runner.replace(
        "{use}", "indices, positions, count = self._prepare_inputs(n)\n"
                 "        return indices.sum().item(), torch.ones(n, device='cuda').sum().item()"))
    assert by_file(check(tmp_path, "--select", "HDL201")) == {"runner.py": [(19, "HDL201")]}

