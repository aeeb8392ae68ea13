"""Branches no call takes (branches.py, ProjectModel.literals): code under an `if` whose test the values every call
of the project passes never make go that way never runs, so it copies and syncs nothing."""

import pytest

from tests.test_project import by_file, check, make_project

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
    make_project(tmp_path, solver=SOLVER, runner=RUNNER)
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
    make_project(tmp_path, solver=SOLVER, runner=RUNNER)
    assert back not in by_file(check(tmp_path, cache=True))["solver.py"]
    (tmp_path / "pkg" / "other.py").write_text(f"import functools\nfrom pkg.solver import Solver\n\n\n"
                                               f"def other(values):\n{change}")
    assert back in by_file(check(tmp_path, cache=True))["solver.py"]


def test_a_parameter_the_function_rebinds_is_not_the_value_its_callers_pass(tmp_path):
    rebinding = SOLVER.replace('        steps = self.time_steps(skip_type, values)\n',
                               '        flag_rl = flag_rl or values.retry\n        steps = self.time_steps(skip_type, values)\n')
    make_project(tmp_path, solver=rebinding, runner=RUNNER)
    assert (20, "HDL101") in by_file(check(tmp_path))["solver.py"]


def test_a_class_that_stores_attributes_by_computed_names_keeps_its_branches(tmp_path):
    dynamic = SOLVER.replace('        self.device = device\n',
                             '        self.device = device\n        for key, value in device.items():\n'
                             '            setattr(self, key, value)\n')
    make_project(tmp_path, solver=dynamic, runner=RUNNER)
    assert (25, "HDL101") in by_file(check(tmp_path))["solver.py"]


def test_a_sync_in_a_branch_no_call_takes_is_not_reported(tmp_path):
    syncing = SOLVER.replace('            steps = torch.tensor(values, device="cuda")\n        if order',
                             '            steps = steps[steps.nonzero()]\n        if order')
    make_project(tmp_path, solver=syncing, runner=RUNNER)
    assert [row for row, code in by_file(check(tmp_path))["solver.py"] if code == "HDL301"] == [25]
    (tmp_path / "pkg" / "other.py").write_text("from pkg.solver import Solver\n\n\n"
                                               "def other(values):\n    return Solver('linear').sample(values, flag_rl=True)\n")
    assert [row for row, code in by_file(check(tmp_path))["solver.py"] if code == "HDL301"] == [19, 25]
