"""Branches no call takes (branches.py, ProjectModel.literals): code under an `if` whose test the values every call
of the project passes never make go that way never runs, so it copies and syncs nothing."""

import pytest

from tests.test_project import by_file, check, make_project

# The functions here are not known to be hot: their copies are findings with `copies-outside-hot-code`
# (`copies_anywhere`), the setting under which a branch no call takes matters for them.

SOLVER = '''\
import torch


class Solver:
    def __init__(self, schedule, device="cuda"):
        self.schedule = schedule
        self.device = device

    def time_steps(self, skip_type, values):
        if skip_type == "logSNR":
            return torch.tensor(values, device="cuda")
        elif skip_type in ("time_uniform", "time_quadratic"):
            return torch.tensor(values, device="cuda")
        return values

    def sample(self, values, skip_type="time_uniform", flag_rl=False, order=None):
        steps = self.time_steps(skip_type, values)
        if flag_rl:
            steps = torch.tensor(values, device="cuda")
        if order is None or order > 2:
            steps = torch.tensor(values, device="cuda")
        if self.schedule == "discrete" and not flag_rl:
            steps = torch.tensor(values, device="cuda")
        else:
            mask = (steps > 0).nonzero()
        return steps
'''

RUNNER = '''\
from pkg.solver import Solver


def generate(values):
    solver = Solver("linear")
    return solver.sample(values, skip_type="time_uniform")


def generate_fast(values):
    solver = Solver(schedule="linear")
    return solver.sample(values, "time_quadratic")
'''


def test_a_branch_no_call_takes_has_no_findings(tmp_path):
    make_project(tmp_path, copies_anywhere=True, solver=SOLVER, runner=RUNNER)
    # Every call passes "time_uniform" or "time_quadratic" on to `skip_type`, none passes `flag_rl` (False by
    # default) nor `order` (None), and every `Solver` is built with "linear": only lines 13 and 21 copy, and only
    # the `else` of the schedule test reads a size back.
    assert by_file(check(tmp_path)) == {"solver.py": [(13, "HDL101"), (21, "HDL101"), (25, "HDL301")]}


@pytest.mark.parametrize(("change", "back"), [
    # A value the model cannot tell, passed on to `skip_type`.
    ("    return Solver('linear').sample(values, skip_type=values.kind)\n", (11, "HDL101")),
    # Another literal.
    ("    return Solver('linear').sample(values, 'logSNR')\n", (11, "HDL101")),
    # `**options` may hold `flag_rl`.
    ("    return Solver('linear').sample(values, **values.options)\n", (19, "HDL101")),
    # A store into the attribute on an object, outside the class.
    ("    solver = Solver('linear')\n    solver.schedule = 'discrete'\n    return solver\n", (23, "HDL101")),
    # A construction with a value the model cannot tell.
    ("    return Solver(values.schedule)\n", (23, "HDL101")),
    # The method handed on: calls the project does not show may pass anything.
    ("    return functools.partial(Solver('linear').sample, skip_type='logSNR')\n", (19, "HDL101")),
])
def test_a_call_passing_another_value_brings_the_branch_back_through_the_cache(tmp_path, monkeypatch, change, back):
    monkeypatch.chdir(tmp_path)
    make_project(tmp_path, copies_anywhere=True, solver=SOLVER, runner=RUNNER)
    assert back not in by_file(check(tmp_path, cache=True))["solver.py"]
    (tmp_path / "pkg" / "other.py").write_text(f"import functools\nfrom pkg.solver import Solver\n\n\n"
                                               f"def other(values):\n{change}")
    assert back in by_file(check(tmp_path, cache=True))["solver.py"]


def test_a_parameter_the_function_rebinds_is_not_the_value_its_callers_pass(tmp_path):
    rebinding = SOLVER.replace('        steps = self.time_steps(skip_type, values)\n',
                               '        flag_rl = flag_rl or values.retry\n        steps = self.time_steps(skip_type, values)\n')
    make_project(tmp_path, copies_anywhere=True, solver=rebinding, runner=RUNNER)
    assert (20, "HDL101") in by_file(check(tmp_path))["solver.py"]


def test_a_class_that_stores_attributes_by_computed_names_keeps_its_branches(tmp_path):
    dynamic = SOLVER.replace('        self.device = device\n',
                             '        self.device = device\n        for key, value in device.items():\n'
                             '            setattr(self, key, value)\n')
    make_project(tmp_path, copies_anywhere=True, solver=dynamic, runner=RUNNER)
    assert (25, "HDL101") in by_file(check(tmp_path))["solver.py"]


def test_a_sync_in_a_branch_no_call_takes_is_not_reported(tmp_path):
    syncing = SOLVER.replace('            steps = torch.tensor(values, device="cuda")\n        if order',
                             '            steps = steps[steps.nonzero()]\n        if order')
    make_project(tmp_path, copies_anywhere=True, solver=syncing, runner=RUNNER)
    assert [row for row, code in by_file(check(tmp_path))["solver.py"] if code == "HDL301"] == [25]
    (tmp_path / "pkg" / "other.py").write_text("from pkg.solver import Solver\n\n\n"
                                               "def other(values):\n    return Solver('linear').sample(values, flag_rl=True)\n")
    assert [row for row, code in by_file(check(tmp_path))["solver.py"] if code == "HDL301"] == [19, 25]


PREFIXED = '''\
import torch


def generate(model, prefix="\\n", number_of_characters=100):
    if len(prefix) > 1:
        ids = torch.tensor([ord(c) for c in prefix[:-1]], device="cuda")
        model(ids)
    if number_of_characters <= 0:
        return torch.tensor([0], device="cuda")
    return model(torch.tensor([ord(prefix[-1])], device="cuda"))
'''


def test_the_length_of_a_string_and_orders_of_numbers_are_read(tmp_path):
    make_project(tmp_path, copies_anywhere=True, text=PREFIXED, trainer="from pkg.text import generate\n\n\n"
                 "def evaluate(model):\n    return generate(model, number_of_characters=50)\n")
    # The only call leaves the one-character prefix and passes 50 characters: only the last copy runs.
    assert by_file(check(tmp_path)) == {"text.py": [(10, "HDL101")]}


# Ways a value reaches a test that the model must not miss (a second reader's cases): each keeps the copy at line
# 7 of `modes.py` reported, which a branch read wrongly as never taken would hide.
MODES = '''\
import torch


class Mode:
    def step(self, values):
        if self.mode == "slow":
            return torch.tensor(values, device="cuda")
        return values
'''


@pytest.mark.parametrize("files", [
    # A record type's field: the constructions store what they pass, not the class-level default.
    {"modes": MODES.replace("class Mode:\n", "class Mode(NamedTuple):\n    mode: str = 'fast'\n\n")
     .replace("import torch\n", "import torch\nfrom typing import NamedTuple\n"),
     "user": "from pkg.modes import Mode\n\n\ndef go(v):\n    return Mode('slow').step(v)\n"},
    # A nested function's parameter of the same name is not the method's.
    {"modes": MODES.replace("    def step", "    def __init__(self, mode='fast'):\n        self.mode = mode\n\n"
                            "        def set_mode(mode):\n            self.mode = mode\n        self.set_mode = set_mode\n\n"
                            "    def step"),
     "user": "from pkg.modes import Mode\n\n\ndef go(v):\n    m = Mode()\n    m.set_mode('slow')\n    return m.step(v)\n"},
    # Objects a registry makes: no construction shows what they pass.
    {"modes": MODES.replace("    def step", "    def __init__(self, mode='fast'):\n        self.mode = mode\n\n"
                            "    def reset(self):\n        self.mode = 'fast'\n\n    def step"),
     "user": "from pkg import modes\n\n\ndef go(v, name):\n    return getattr(modes, name)(mode=v.mode).step(v)\n"},
    # Stores by a name the model does not read as a plain store.
    {"modes": MODES.replace("    def step", "    def __init__(self):\n        self.mode = 'fast'\n\n"
                            "    def load(self, state):\n        self.__dict__.update(state)\n\n    def step"),
     "user": "from pkg.modes import Mode\n\n\ndef go(v):\n    return Mode().step(v)\n"},
    {"modes": MODES.replace("    def step", "    def __init__(self):\n        self.mode = 'fast'\n\n"
                            "    def slow(self):\n        object.__setattr__(self, 'mode', 'slow')\n\n    def step"),
     "user": "from pkg.modes import Mode\n\n\ndef go(v):\n    return Mode().step(v)\n"},
    # A subclass's property of that name, and a mixin a subclass adds, in another module.
    {"modes": MODES.replace("    def step", "    mode = 'fast'\n\n    def step"),
     "user": "from pkg.modes import Mode\n\n\nclass Slow(Mode):\n    @property\n    def mode(self):\n"
             "        return 'slow'\n\n\ndef go(v):\n    return Slow().step(v)\n"},
    {"modes": MODES.replace("    def step", "    mode = 'fast'\n\n    def step"),
     "user": "from pkg.modes import Mode\n\n\nclass Slower:\n    def slow_down(self):\n        self.mode = 'slow'\n\n\n"
             "class Both(Mode, Slower):\n    pass\n"},
    # An object remade by `type(self)(...)`.
    {"modes": MODES.replace("    def step", "    def __init__(self, mode='fast'):\n        self.mode = mode\n\n"
                            "    def slowed(self):\n        return type(self)('slow')\n\n    def step"),
     "user": "from pkg.modes import Mode\n\n\ndef go(v):\n    return Mode().slowed().step(v)\n"},
])
def test_values_the_model_cannot_follow_keep_the_branch(tmp_path, files):
    make_project(tmp_path, copies_anywhere=True, **files)
    lines = files["modes"].splitlines()
    copy = next(index for index, text in enumerate(lines, 1) if "torch.tensor" in text)
    assert (copy, "HDL101") in by_file(check(tmp_path))["modes.py"]


@pytest.mark.parametrize(("caller", "reported"), [
    # A classmethod called on its class binds `cls`: `True` is `flag`.
    ("    return Maker.build(values, True)\n", True),
    ("    return Maker.build(values)\n", False),
    # A caller that changes the parameter it passes on.
    ("    return relay(values)\n\n\ndef relay(values, flag=False):\n    flag |= values.retry\n"
     "    return Maker.build(values, flag)\n", True),
    ("    return relay(values)\n\n\ndef relay(values, flag=False):\n    return Maker.build(values, flag)\n", False),
])
def test_classmethods_and_parameters_changed_before_they_are_passed_on(tmp_path, caller, reported):
    maker = ("import torch\n\n\nclass Maker:\n    @classmethod\n    def build(cls, values, flag=False):\n"
             "        if flag:\n            return torch.tensor(values, device='cuda')\n        return values\n")
    make_project(tmp_path, copies_anywhere=True, maker=maker, user=f"from pkg.maker import Maker\n\n\ndef go(values):\n{caller}")
    assert ((8, "HDL101") in by_file(check(tmp_path)).get("maker.py", [])) is reported


def test_a_sync_in_the_test_of_a_one_line_if_is_not_in_its_block(tmp_path):
    code = ("import torch\n\n\ndef pick(t, flag=False):\n    if t.nonzero().numel() > 0 and flag: return t\n"
            "    return None\n")
    make_project(tmp_path, copies_anywhere=True, pick=code, user="from pkg.pick import pick\n\n\ndef go(t):\n    return pick(t.cuda())\n")
    assert (5, "HDL301") in by_file(check(tmp_path))["pick.py"]


@pytest.mark.parametrize(("body", "copies"), [
    # the arm of an `if` a CUDA tensor never takes
    ("    if x.device.type == 'mps':\n        y = torch.tensor(v, device=x.device)\n", []),
    ("    if x.device.type in ('mps', 'xla'):\n        y = torch.tensor(v, device=x.device)\n", []),
    ("    if x.is_mps:\n        y = torch.tensor(v, device=x.device)\n", []),
    ("    if x.device.type != 'xpu':\n        pass\n    else:\n        y = torch.tensor(v, device=x.device)\n", []),
    # after an `if` a CUDA tensor always leaves early
    ("    if x.device.type not in ('mps', 'xla'):\n        return x\n    y = torch.tensor(v, device=x.device)\n", []),
    ("    if x.device.type != 'mps' and flag:\n        raise ValueError\n    y = torch.tensor(v, device=x.device)\n",
     ["HDL101"]),
    ("    if x.device.type != 'mps' or flag:\n        raise ValueError\n    y = torch.tensor(v, device=x.device)\n", []),
    # a CUDA program holds CPU tensors too: a branch for one (or for anything not CUDA) is no other device's
    ("    if x.device.type == 'cpu':\n        y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
    ("    if not x.is_cuda:\n        y = torch.tensor(v, device=x.device)\n", ["HDL101"]),  # (no sync: see syncs)
    ("    if x.device.type == 'cuda':\n        raise ValueError\n    y = torch.tensor(v, device=x.device)\n",
     ["HDL101"]),
    # arms and exits a CUDA tensor takes, or tests that ask something else
    ("    if x.device.type == 'cuda':\n        y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
    ("    if x.device.type != 'mps':\n        y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
    ("    if x.device.type == 'mps':\n        return x\n    y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
    ("    if x.device.type == 'mps':\n        x = x + 1\n    y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
    ("    if x.device.type == 'mps' or flag:\n        y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
    ("    if flag:\n        y = torch.tensor(v, device=x.device)\n", ["HDL101"]),
])
def test_code_a_cuda_device_never_runs_copies_and_syncs_nothing(body, copies):
    from tests.helpers import lint

    code = f"import torch\ndef forward(x, v, flag):\n    x = x.cuda()\n{body}    return y.item()\n"
    assert [finding.code for finding in lint(code, "HDL101")] == copies
    # the read in the same arm is no sync on CUDA either (the sync rules also take `if not x.is_cuda:` for a test
    # of another device, `syncs._only_on_other_devices`)
    code = code.replace("y = torch.tensor(v, device=x.device)", "y = x.sum().item()").replace("    return y.item()\n",
                                                                                              "")
    syncs = [] if "not x.is_cuda" in body else ["HDL201" for _ in copies]
    assert [finding.code for finding in lint(code, "HDL201")] == syncs


# Tests of a parameter's type read against the literals every call passes (a literal is never a tensor). Lines: 7
# never runs (`scale` is always 2), 9 neither (2 is an int), 11 does (`x` is a tensor the model does not follow).
TYPE_TESTS = '''\
import torch


class Embedder(torch.nn.Module):
    def forward(self, x, scale=2):
        if isinstance(scale, torch.Tensor):
            y = torch.tensor([1.0], device="cuda")
        if not isinstance(scale, (int, float)):
            y = torch.tensor([2.0], device="cuda")
        if not torch.is_tensor(x):
            x = torch.tensor([x], device="cuda")
        return x * scale
'''

CALLERS = '''\
import torch
from pkg.embed import Embedder


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embedder()

    def forward(self, ids):
        return self.embed(torch.zeros(4, device="cuda"))
'''


def test_a_type_test_of_the_literals_every_call_passes(tmp_path):
    make_project(tmp_path, copies_anywhere=True, embed=TYPE_TESTS, model=CALLERS)
    assert by_file(check(tmp_path)) == {"embed.py": [(11, "HDL101")]}  # (line 9: HDL103 where it runs)


@pytest.mark.parametrize(("call", "lines"), [
    ("self.embed(ids, scale=ids.scale)", [7, 9, 11]),  # a value the model cannot tell
    ("self.embed(ids, 0.5)", [11]),  # another literal, a number too
    ("self.embed(ids, 'half')", [9, 11]),  # a string is no number
])
def test_a_call_passing_another_value_brings_the_type_test_back(tmp_path, call, lines):
    make_project(tmp_path, copies_anywhere=True, embed=TYPE_TESTS,
                 model=CALLERS.replace('self.embed(torch.zeros(4, device="cuda"))', call))
    assert [line for line, _ in by_file(check(tmp_path))["embed.py"]] == lines


@pytest.mark.parametrize("code", [
    # a store in an earlier arm, in a loop around the test: the next turn tests what was stored
    "    def forward(self, x, bound=None):\n        for _ in range(3):\n            if bound is None:\n"
    "                bound = 2.0\n            elif bound == 2.0:\n"
    "                x = x / torch.tensor([bound], device=\"cuda\")\n        return x\n",
    # a store on a continuation line of the test itself
    "    def forward(self, x, bound=None):\n        if bound is None and (\n                bound := 2.0) == 2.0:\n"
    "            x = x / torch.tensor([1.0], device=\"cuda\")\n        return x\n",
    # a store above the test
    "    def forward(self, x, bound=None):\n        bound = 2.0\n        if bound == 2.0:\n"
    "            x = x / torch.tensor([1.0], device=\"cuda\")\n        return x\n",
])
def test_a_test_a_store_reaches_reads_no_call_value(tmp_path, code):
    module = "import torch\n\n\nclass Embedder(torch.nn.Module):\n" + code
    make_project(tmp_path, copies_anywhere=True, embed=module, model=CALLERS)
    assert by_file(check(tmp_path)).get("embed.py")


def test_a_class_a_type_test_cannot_tell_keeps_the_branch(tmp_path):
    # A number may be a `Number`: whether 2 is one, only the class's definition says.
    code = TYPE_TESTS.replace("isinstance(scale, torch.Tensor)", "isinstance(scale, numbers.Number)").replace(
        "import torch\n", "import numbers\nimport torch\n")
    make_project(tmp_path, copies_anywhere=True, embed=code, model=CALLERS)
    assert (8, "HDL103") in by_file(check(tmp_path))["embed.py"]


NORMS = '''\
import math

import torch


def grad_norm(grads, norm_type: float = 2.0):
    norm_type = float(norm_type)
    if norm_type == torch.inf:
        return torch.tensor([max(grads)], device="cuda")
    if norm_type == -math.inf or norm_type == float("-inf"):
        return torch.tensor([min(grads)], device="cuda")
    return torch.tensor([sum(grads)], device="cuda")
'''


@pytest.mark.parametrize(("call", "lines"), [
    ("grad_norm(grads)", [12]),  # the default, 2.0, converted by `float`: neither infinity
    ("grad_norm(grads, math.inf)", [9, 11, 12]),  # a value the model cannot tell (no literal)
    ("grad_norm(grads, 'inf')", [9, 12]),  # `float('inf')` is infinity
])
def test_infinities_and_a_parameter_converted_in_place_are_read(tmp_path, call, lines):
    make_project(tmp_path, copies_anywhere=True, norms=NORMS,
                 user=f"import math\nfrom pkg.norms import grad_norm\n\n\ndef clip(grads):\n    return {call}\n")
    assert [line for line, _ in by_file(check(tmp_path))["norms.py"]] == lines


CONVERSIONS = '''\
import torch
from torch import nn


class UNet(nn.Module):
    def forward(self, sample, timestep):
        timesteps = timestep
        if not torch.is_tensor(timesteps):
            timesteps = torch.tensor([timesteps], dtype=torch.long, device=sample.device)
        return sample * timesteps


class Policy(nn.Module):
    def forward(self, x):
        if isinstance(x, torch.Tensor):
            return x.float()
        return torch.tensor(x, device="cuda")


class Noise(nn.Module):
    def forward(self, x, bound):
        if x is not None and not isinstance(bound, torch.Tensor):
            bound = torch.tensor(bound, device="cuda")
        if isinstance(bound, (torch.Tensor, list)):
            return torch.tensor(bound, device="cuda")
        return x * bound


class Tracker(nn.Module):
    def forward(self, x):
        if isinstance(x, torch.Tensor):
            raise NotImplementedError
        return torch.tensor(x, device="cuda")


class Scaled(nn.Module):
    def forward(self, x, shift, scale=None):
        if not isinstance(shift, (torch.Tensor, float)):
            shift = torch.tensor(shift, device="cuda")
        if not torch.is_tensor(scale):
            scale = torch.tensor(1.0 if scale is None else scale, device=x.device)
        return x * scale + shift


def scaled(x, y):
    return Scaled().forward(x, y)
'''


@pytest.mark.parametrize(("caller", "lines"), [
    ("", []),  # no call passes a Python value: each branch may be for values no caller passes
    ("def noisy(x):\n    return Noise().forward(x, 0.5)\n", [23]),  # a literal passed: its conversion runs
    # a list, `.tolist()`, or a parameter some call passes a list, at one call of several: the branch runs
    ("def act(obs):\n    return Policy().forward([obs, 0.0])\n", [17]),
    ("def step(x, t, ids):\n    UNet().forward(x, t)\n    return UNet().forward(x, ids.tolist())\n", [9]),
    ("def act(obs):\n    return Policy().forward(obs)\n\n\ndef run():\n    return act([[0.0]])\n", [17]),
    # a call by the method's name on an object of unknown class may run it too
    ("def act(policy, obs):\n    return policy.forward(obs)\n\n\ndef run():\n    return act(Policy(), [[0.0]])\n", [17]),
    ("def act(policy, obs):\n    return policy.forward(obs)\n\n\ndef run(x):\n    return act(Policy(), x)\n", []),
])
def test_a_copy_converting_a_parameter_known_not_to_be_a_tensor_needs_a_call_passing_one(tmp_path, caller, lines):
    # In a module's `forward` (hot), the arm of `not torch.is_tensor(x)` (of a local naming the parameter too), the
    # `else` of `isinstance(x, Tensor)` (past its `return`) and a true `and` part convert what callers may never
    # pass; a test naming another class too (lines 25, 39) does not say which the value is, past a `raise` for a
    # tensor (line 33) the function takes no tensor at all, and where every call leaves a parameter to its default
    # (None, line 41) the branch runs.
    make_project(tmp_path, unet=CONVERSIONS + "\n\n" + caller)
    assert [line for line, code in by_file(check(tmp_path)).get("unet.py", []) if code == "HDL101"] == [
        *lines, 25, 33, 39, 41]


def test_a_copy_in_a_branch_for_non_tensors_is_reported_with_copies_outside_hot_code(tmp_path):
    make_project(tmp_path, copies_anywhere=True, unet=CONVERSIONS)
    assert [line for line, code in by_file(check(tmp_path))["unet.py"] if code == "HDL101"] == [9, 17, 23, 25, 33, 39, 41]


def test_python_data_passed_around_a_cycle_of_calls_reaches_each_parameter(tmp_path):
    # A question met again inside its own answer (A -> B -> A) must not leave B's answer as "no" for good.
    code = ("import torch\nfrom torch import nn\n\n\nclass A(nn.Module):\n    def forward(self, x):\n"
            "        if not torch.is_tensor(x):\n            t = torch.tensor(x, device='cuda')\n        return B().forward(x)\n"
            "\n\nclass B(nn.Module):\n    def forward(self, y):\n        if not torch.is_tensor(y):\n"
            "            u = torch.tensor(y, device='cuda')\n        return A().forward(y)\n\n\n"
            "def run():\n    return A().forward([1.0])\n")
    make_project(tmp_path, cycle=code)
    assert [line for line, code in by_file(check(tmp_path))["cycle.py"] if code == "HDL101"] == [8, 15]


DRAFT = '''\
import contextlib
from typing import List, Optional

import torch
from torch import nn


class Draft:
    def filter_batch(self, new_indices, new_indices_cpu=None):
        if new_indices_cpu is not None:
            kept = new_indices_cpu
        else:
            kept = new_indices.cuda().cpu()
        return kept


class Model(nn.Module):
    def forward(self, draft, new_indices):
        return filter_batch(draft, new_indices, draft.keep)

'''


@pytest.mark.parametrize(("caller", "reported"), [
    # A parameter made a list where it is None, then passed on (sglang's `ScheduleBatch.filter_batch`).
    ("    if keep is None:\n        keep = [i for i in range(3)]\n", False),
    # ... left for where it is None, or asserted not None.
    ("    if keep is None or len(keep) == 0:\n        return None\n", False),
    ("    if not keep:\n        raise ValueError(keep)\n", False),
    ("    assert keep is not None\n", False),
    # ... or given a default in one expression.
    ("    keep = keep if keep is not None else []\n", False),
    ("    keep = keep or list(range(3))\n", False),
    ("    with torch.no_grad():\n        keep = torch.arange(3) if keep is None else keep\n", False),
    # A local every binding of which is a value.
    ("    keep2 = torch.arange(3)\n    if draft.x:\n        keep2 = (1, 2)\n    keep = keep2\n", False),
    # Still None on some path: made a list only under a further test, made so after the call, or bound to a
    # value that may be None (an attribute, another parameter, a function's result).
    ("    if keep is None:\n        if draft.x:\n            keep = [1]\n", True),
    ("    out = draft.filter_batch(new_indices, new_indices_cpu=keep)\n    if keep is None:\n        keep = []\n", True),
    ("    if keep is None:\n        keep = draft.kept\n", True),
    ("    keep = keep or new_indices\n", True),
    ("    if keep is None:\n        keep = compute(draft)\n", True),
    ("    keep = min(keep or [], [])\n", True),
    # ... or the test leaves the arm where it is None to other code.
    ("    if keep is not None:\n        pass\n", True),
    ("    if keep is None and draft.x:\n        return None\n", True),
    # Calls that may return None: a method named as a tensor's (a batch moved in place), torch's other functions,
    # a builtin's name the module binds.
    ("    keep = Holder().to('cuda')\n", True),
    ("    keep = torch.jit.annotate(Optional[List[int]], None)\n", True),
    ("    keep = torch.cuda.synchronize()\n", True),
    ("    keep = sorted(keep or [])\n", True),
    ("    keep = len(keep or [])\n", True),  # (`len` is imported below)
    # A narrowing a context manager may skip, and a rebinding by a match pattern.
    ("    with contextlib.suppress(Exception):\n        draft.risky()\n        if keep is None:\n"
     "            keep = []\n", True),
    ("    keep = keep or []\n    match draft.x:\n        case keep:\n            pass\n", True),
])
def test_a_branch_for_none_no_call_takes_when_every_caller_passes_a_value(tmp_path, caller, reported):
    # The `.cpu()` in `filter_batch`, hot through `forward`, runs only where `new_indices_cpu` is None.
    user = (DRAFT + "\ndef compute(draft):\n    return draft.y\n\n\nclass Holder:\n    def to(self, device):\n"
            "        self.device = device\n\n\ndef sorted(values):\n    return None\n\n\n"
            "def filter_batch(draft, new_indices, keep=None):\n" + caller
            + "    return draft.filter_batch(new_indices, new_indices_cpu=keep)\n\n\n"
            "try:\n    from pkg.helpers import len\nexcept ImportError:\n    pass\n")
    make_project(tmp_path, spec=user)
    found = by_file(check(tmp_path)).get("spec.py", [])
    assert ((13, "HDL201") in found) is reported, found


def test_a_call_passing_none_elsewhere_brings_the_branch_for_none_back_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    user = (DRAFT + "\ndef filter_batch(draft, new_indices, keep=None):\n    keep = keep or []\n"
            "    return draft.filter_batch(new_indices, new_indices_cpu=keep)\n")
    make_project(tmp_path, spec=user)
    assert (13, "HDL201") not in by_file(check(tmp_path, cache=True)).get("spec.py", [])
    (tmp_path / "pkg" / "other.py").write_text("from pkg.spec import Draft\n\n\n"
                                               "def other(n):\n    return Draft().filter_batch(n)\n")
    assert (13, "HDL201") in by_file(check(tmp_path, cache=True))["spec.py"]


def test_an_attribute_every_store_of_which_is_a_value_is_not_none(tmp_path):
    quantizer = ("import torch\n\n\nclass Quantizer:\n    def __init__(self, levels=None):\n"
                 "        self.levels = levels if levels is not None else [0.5, 1.0]\n\n"
                 "    def quantize(self, x):\n        if self.levels is None:\n"
                 "            return torch.tensor(x, device='cuda')\n        return x\n")
    make_project(tmp_path, copies_anywhere=True, quantizer=quantizer,
                 user="from pkg.quantizer import Quantizer\n\n\ndef go(x):\n    return Quantizer().quantize(x)\n")
    assert by_file(check(tmp_path)).get("quantizer.py", []) == []
    (tmp_path / "pkg" / "reset.py").write_text("def reset(q):\n    q.levels = None\n")
    assert by_file(check(tmp_path))["quantizer.py"] == [(10, "HDL101")]


def test_a_parameter_ruled_not_none_keeps_the_values_its_callers_pass(tmp_path):
    # `outer` rules None out before passing `mode` on: `inner` still sees the literal every call passes, so its
    # "fast" branch is never taken.
    code = ("import torch\n\n\ndef inner(values, mode):\n    if mode == 'fast':\n"
            "        return torch.tensor(values, device='cuda')\n    return values\n\n\n"
            "def outer(values, mode):\n    assert mode is not None\n    return inner(values, mode)\n\n\n"
            "def run(values):\n    return outer(values, 'slow')\n")
    (tmp_path / "a").mkdir()
    make_project(tmp_path / "a", copies_anywhere=True, modes=code)
    assert by_file(check(tmp_path / "a")).get("modes.py", []) == []
    (tmp_path / "b").mkdir()
    make_project(tmp_path / "b", copies_anywhere=True, modes=code.replace("'slow')", "'fast')"))
    assert by_file(check(tmp_path / "b"))["modes.py"] == [(6, "HDL101")]


def test_a_value_known_only_not_to_be_none_may_be_a_tensor(tmp_path):
    # `forward` is always given a tensor (`obs.float()`): its conversion of Python data never runs.
    code = ("import torch\nfrom torch import nn\n\n\nclass Policy(nn.Module):\n    def forward(self, x):\n"
            "        if not torch.is_tensor(x):\n            x = torch.tensor(x, device='cuda')\n        return x * 2\n\n\n"
            "def act(obs):\n    return Policy().forward(obs.float())\n\n\ndef act2(obs):\n"
            "    return Policy().forward(obs.detach())\n")
    (tmp_path / "a").mkdir()
    make_project(tmp_path / "a", policy=code)
    assert by_file(check(tmp_path / "a")).get("policy.py", []) == []
    (tmp_path / "b").mkdir()
    make_project(tmp_path / "b", policy=code + "\n\ndef act3():\n    return Policy().forward([1.0])\n")
    assert by_file(check(tmp_path / "b"))["policy.py"] == [(8, "HDL101")]


@pytest.mark.parametrize(("call", "reported"), [
    # Calls by the name on objects of unknown class that cannot bind to `Draft.filter_batch`'s parameters call
    # another method: a keyword it lacks, none of its required arguments, too many positional ones.
    ("    batch.filter_batch(reqs=[1])\n", False),
    ("    batch.filter_batch()\n", False),
    ("    batch.filter_batch(ids, [1], [2], [3])\n", False),
    # Calls that may be of it, leaving `new_indices_cpu` None.
    ("    batch.filter_batch(ids)\n", True),
    ("    batch.filter_batch(new_indices=ids)\n", True),
    ("    batch.filter_batch(*ids)\n", True),
    ("    batch.filter_batch(**ids)\n", True),
])
def test_calls_by_name_that_cannot_bind_to_the_method_pass_it_nothing(tmp_path, call, reported):
    draft = ("from torch import nn\n\n\nclass Draft:\n    def filter_batch(self, new_indices, new_indices_cpu=None):\n"
             "        if new_indices_cpu is None:\n            return new_indices.cuda().cpu()\n"
             "        return new_indices_cpu\n\n\nclass Model(nn.Module):\n    def forward(self, spec, batch, ids):\n"
             "        spec.filter_batch(ids, new_indices_cpu=[i for i in ids])\n    " + call)
    make_project(tmp_path, draft=draft)
    assert ((7, "HDL201") in by_file(check(tmp_path)).get("draft.py", [])) is reported


def test_a_call_on_an_objects_class_by_the_name_passes_the_object_first(tmp_path):
    # Neither call's receiver has a class the model knows: both may run `Draft.filter`. The second passes
    # `batch` first, so its `mode` is "slow" too, and the upload never runs.
    code = ("import torch\n\n\nclass Draft:\n    def filter(self, values, mode):\n        if mode == 'fast':\n"
            "            return torch.tensor(values, device='cuda')\n        return values\n\n\n"
            "def run(draft, batch, values):\n    draft.filter(values, 'slow')\n"
            "    return type(batch).filter(batch, values, 'slow')\n")
    (tmp_path / "a").mkdir()
    make_project(tmp_path / "a", copies_anywhere=True, draft=code)
    assert by_file(check(tmp_path / "a")).get("draft.py", []) == []
    (tmp_path / "b").mkdir()
    make_project(tmp_path / "b", copies_anywhere=True, draft=code.replace("values, 'slow')\n", "values, 'fast')\n"))
    assert by_file(check(tmp_path / "b"))["draft.py"] == [(7, "HDL101")]
