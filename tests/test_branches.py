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


# A fallback for values that are not tensors, in a function every call of which passes a tensor (or None): the
# copy in it never runs. Lines: 7 the `is_tensor` fallback, 9 the default's, 13 the `else` of None and a tensor.
FALLBACKS = '''\
import torch


class Embedder(torch.nn.Module):
    def forward(self, x, scale=2, bound=None):
        if not torch.is_tensor(x):
            x = torch.tensor([x], device="cuda")
        if not isinstance(scale, torch.Tensor):
            scale = torch.tensor(scale, device="cuda")
        if bound is None:
            bound = x.abs().amax()
        elif not isinstance(bound, torch.Tensor):
            bound = torch.tensor(bound, device="cuda")
        return x * scale / bound
'''

CALLERS = '''\
import torch
from pkg.embed import Embedder


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embedder()

    def forward(self, ids):
        t = torch.zeros(4, device="cuda")
        return self.embed(t) + self.embed(t, bound=t.amax())
'''


def test_a_fallback_for_values_no_call_passes_has_no_findings(tmp_path):
    make_project(tmp_path, copies_anywhere=True, embed=FALLBACKS, model=CALLERS)
    # Every call passes a tensor as `x`, and None or a tensor as `bound`; `scale` is left at 2, not a tensor.
    assert by_file(check(tmp_path)) == {"embed.py": [(9, "HDL101")]}


@pytest.mark.parametrize(("call", "back"), [
    ("self.embed(0.5)", (7, "HDL101")),  # a number
    ("self.embed(ids)", (7, "HDL101")),  # a value the model cannot tell
    ("self.embed(t, bound=1.0)", (13, "HDL101")),
    ("self.embed(t, bound=ids)", (13, "HDL101")),
])
def test_a_call_passing_another_kind_of_value_brings_the_fallback_back(tmp_path, call, back):
    make_project(tmp_path, copies_anywhere=True, embed=FALLBACKS, model=CALLERS.replace("self.embed(t) + ", f"{call} + "))
    assert back in by_file(check(tmp_path))["embed.py"]


@pytest.mark.parametrize("stored", [
    # in a loop around the test, after it: the next turn tests what was stored
    "        for _ in range(2):\n            if not torch.is_tensor(x):\n"
    "                y = torch.tensor([x], device=\"cuda\")\n            x = x.tolist()\n",
    # above the test
    "        x = x.tolist()\n        if not torch.is_tensor(x):\n            y = torch.tensor([x], device=\"cuda\")\n",
])
def test_a_type_test_after_the_parameter_is_stored_into_reads_nothing(tmp_path, stored):
    code = FALLBACKS.replace("        if not torch.is_tensor(x):\n            x = torch.tensor([x], device=\"cuda\")\n", stored)
    make_project(tmp_path, copies_anywhere=True, embed=code, model=CALLERS)
    assert (8, "HDL101") in by_file(check(tmp_path))["embed.py"]


@pytest.mark.parametrize(("written", "call"), [
    # A number may be a `Number`: whether the number passed is one, only the class's definition says.
    ("isinstance(x, (torch.Tensor, numbers.Number))", "self.embed(0.5)"),
    # A tensor passed may be a parameter or not.
    ("isinstance(x, torch.nn.Parameter)", "self.embed(t)"),
])
def test_a_class_a_type_test_cannot_tell_keeps_the_branch(tmp_path, written, call):
    code = FALLBACKS.replace("not torch.is_tensor(x)", f"not {written}").replace("import torch\n",
                                                                                "import numbers\nimport torch\n")
    make_project(tmp_path, copies_anywhere=True, embed=code, model=CALLERS.replace("self.embed(t) + ", f"{call} + "))
    assert (8, "HDL101") in by_file(check(tmp_path))["embed.py"]


def test_a_tensor_is_an_instance_of_a_tuple_naming_the_tensor_class(tmp_path):
    code = FALLBACKS.replace("not torch.is_tensor(x)", "not isinstance(x, (torch.Tensor, numbers.Number))").replace(
        "import torch\n", "import numbers\nimport torch\n")
    make_project(tmp_path, copies_anywhere=True, embed=code, model=CALLERS)
    assert (8, "HDL101") not in by_file(check(tmp_path))["embed.py"]
