"""The whole-file facts rules rest on: aliases, bindings, device and placement reasoning, code context."""

import ast
import textwrap

import pytest

from h2dlint import placement
from h2dlint.facts import Data, Device, FileFacts, Placement, _held_per_line, is_other_accelerator_path
from h2dlint.hotness import (
    context_at,
    fills_a_cache,
    flag_uses,
    is_hot_function,
    periodic_test,
    statements,
    statements_run_once_in_a_while,
)
from h2dlint.placement import classify_data, classify_device, classify_placement
from h2dlint.source import LineIndex
from h2dlint.syntax import annotated_name

from .helpers import lint


def facts_for(code: str) -> FileFacts:
    return FileFacts(ast.parse(code), LineIndex(code))


def has_gpu_evidence(code: str, gpu_device_names: tuple[str, ...] = ()) -> bool:
    """The file-level GPU evidence FileFacts finds in the tree (what the engine's gate and the sync finder ask)."""
    found = facts_for(code)
    found.gpu_device_names = gpu_device_names
    return found.gpu_evidence


def expression(code: str, marker: str = "TARGET"):
    """The value assigned to the name `marker` in `code`, and its line."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == marker:
            return node.value, node.lineno
    raise AssertionError("no TARGET")


def test_aliases_resolve_imports():
    facts = facts_for("import torch as th\nfrom torch import tensor as T\nimport torch.cuda\nimport numpy\n")
    assert facts.qualify("th.tensor") == "torch.tensor"
    assert facts.qualify("T") == "torch.tensor"
    assert facts.qualify("torch.cuda.synchronize") == "torch.cuda.synchronize"
    assert facts.qualify("np.zeros") is None
    assert facts.local_name_for("torch") in ("th", "torch")


@pytest.mark.parametrize(("value", "expected"), [
    ('"cuda"', Device.CUDA), ('"cuda:1"', Device.CUDA), ("0", Device.CUDA),
    ('torch.device("cuda", 0)', Device.CUDA), ("torch.device(type='cuda')", Device.CUDA),
    ('f"cuda:{rank}"', Device.CUDA), ("torch.cuda.current_device()", Device.CUDA),
    ('"cpu"', Device.NOT_CUDA), ('"meta"', Device.NOT_CUDA), ('torch.device("cpu")', Device.NOT_CUDA),
    ("None", Device.NOT_CUDA), ("x.device", Device.UNKNOWN), ("param", Device.UNKNOWN),
    ('"cuda" if flag else "cpu"', Device.UNKNOWN), ('"cuda" if flag else 1', Device.CUDA),
    # What the GPU evidence of the text cannot see is not CUDA: a device string PyTorch refuses, one spelled in
    # pieces (unknown), an int given as the type.
    ('" cuda"', Device.NOT_CUDA), ('"\\tcuda"', Device.NOT_CUDA), ("'cu' 'da'", Device.CUDA),
    ("torch.device(type=0)", Device.UNKNOWN),
])
def test_classify_device(value, expected):
    code = f"import torch\ndef forward(param, x, flag, rank):\n    TARGET = {value}\n"
    node, line = expression(code)
    assert classify_device(facts_for(code), node, line) is expected


def test_device_names_follow_reaching_bindings():
    code = ("import torch\ndef forward(a):\n    dev = 'cpu'\n    if a:\n        dev2 = 'cuda'\n    else:\n"
            "        dev2 = 'cuda:1'\n    TARGET = (dev, dev2)\n")
    node, line = expression(code)
    facts = facts_for(code)
    assert classify_device(facts, node.elts[0], line) is Device.NOT_CUDA
    assert classify_device(facts, node.elts[1], line) is Device.CUDA


def test_a_name_bound_to_ints_is_no_device_ordinal():
    # A count or an index as often as a device; only an int written as the device is one (as the text shows).
    code = "def forward(c):\n    first = 0\n    either = 0 if c else 1\n    TARGET = (first, either, 1 if c else 0)\n"
    node, line = expression(code)
    assert [classify_device(facts_for(code), element, line) for element in node.elts] == [
        Device.UNKNOWN, Device.UNKNOWN, Device.CUDA]


def test_bindings_in_the_other_branch_do_not_reach():
    code = "def forward(c):\n    if c:\n        idx = None\n    else:\n        idx = []\n        TARGET = idx\n"
    node, line = expression(code)
    assert classify_data(facts_for(code), node, line) is Data.HOST


def test_a_later_binding_in_a_loop_reaches_an_earlier_use():
    code = "def forward(xs):\n    idx = []\n    for x in xs:\n        TARGET = idx\n        idx = x.cuda()\n"
    node, line = expression(code)
    assert classify_data(facts_for(code), node, line) is Data.UNKNOWN


@pytest.mark.parametrize(("rebinding", "expected"), [
    # Every path to the read rebinds `x`: the parameter no longer reaches it.
    ("    if c:\n        x = torch.ones(3, device='cuda')\n    else:\n        x = torch.zeros(3, device='cuda')\n",
     Placement.GPU),
    ("    if c:\n        x = torch.ones(3, device='cuda')\n    elif d:\n        x = torch.zeros(3, device='cuda')\n"
     "    else:\n        raise ValueError(c)\n", Placement.GPU),
    ("    try:\n        x = x.cuda()\n    except RuntimeError:\n        x = torch.zeros(3, device='cuda')\n",
     Placement.GPU),
    ("    with torch.no_grad():\n        x = x.cuda()\n", Placement.GPU),
    # Some path keeps the parameter: an `if` without `else`, an arm that does not bind, a loop that may not run,
    # a handler that goes on, an update.
    ("    if c:\n        x = torch.ones(3, device='cuda')\n", Placement.UNKNOWN),
    ("    if c:\n        x = torch.ones(3, device='cuda')\n    elif d:\n        x = torch.zeros(3, device='cuda')\n",
     Placement.UNKNOWN),
    ("    if c:\n        x = torch.ones(3, device='cuda')\n    else:\n        y = torch.zeros(3, device='cuda')\n",
     Placement.UNKNOWN),
    ("    for _ in range(c):\n        x = torch.ones(3, device='cuda')\n", Placement.UNKNOWN),
    ("    try:\n        x = x.cuda()\n    except RuntimeError:\n        pass\n", Placement.UNKNOWN),
    ("    if c:\n        x += torch.ones(3, device='cuda')\n    else:\n        x += 1\n", Placement.UNKNOWN),
    # A manager that may swallow the exception the body raises: the body's binding may not be made.
    ("    with contextlib.suppress(RuntimeError):\n        x = x.cuda()\n", Placement.UNKNOWN),
    ("    if c:\n        with contextlib.suppress(RuntimeError):\n            return x\n    else:\n"
     "        x = x.cuda()\n", Placement.UNKNOWN),
])
def test_a_statement_that_rebinds_a_name_on_every_path_hides_what_came_before(rebinding, expected):
    code = f"import contextlib\nimport torch\ndef forward(x, c, d):\n{rebinding}    TARGET = x\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("read", "expected"), [
    ("        TARGET = x\n", Placement.GPU),
    ("    TARGET = x\n", Placement.UNKNOWN),
    # A lambda made later in the loop's body may run in the next pass, after `x = t.cpu()`.
    ("        TARGET = lambda: x\n", Placement.UNKNOWN),
])
def test_a_rebinding_hides_what_came_before_only_from_reads_in_its_block(read, expected):
    # The `if`/`else` rebinds `x` in the loop's body: later in that body `x` is the GPU tensor; after the loop, which
    # may not run, the parameter may still be there.
    code = ("import torch\ndef forward(x, t, c, n):\n    for _ in range(n):\n        x = t.cpu()\n        if c:\n"
            "            x = torch.ones(3, device='cuda')\n        else:\n"
            f"            x = torch.zeros(3, device='cuda')\n{read}")
    node, line = expression(code)
    if isinstance(node, ast.Lambda):
        node = node.body
    assert classify_placement(facts_for(code), node, line) is expected


def test_a_long_elif_chain_is_walked_without_recursion():
    arms = "".join(f"    elif c == {i}:\n        x = torch.ones({i}, device='cuda')\n" for i in range(1, 1500))
    code = f"import torch\ndef forward(x, c):\n    if c == 0:\n        x = x.cuda()\n{arms}    else:\n        x = x.cuda()\n" \
           "    TARGET = x\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is Placement.GPU

@pytest.mark.parametrize(("value", "expected"), [
    ("ends.device", Device.NOT_CUDA), ("ends[0].device", Device.NOT_CUDA), ("lens.device", Device.CUDA),
    ("x.device", Device.UNKNOWN), ("param_list[0].device", Device.UNKNOWN),
])
def test_a_tensor_device_is_where_the_tensor_lives(value, expected):
    code = ("import torch\ndef forward(x, mask, n):\n    ends = mask.to(device='cpu').nonzero(as_tuple=True)[0]\n"
            "    lens = torch.zeros(n, device='cuda')\n    param_list = []\n    param_list.append(x)\n"
            f"    TARGET = {value}\n")
    node, line = expression(code)
    assert classify_device(facts_for(code), node, line) is expected


def test_a_binding_is_classified_where_it_was_made():
    # `orig` keeps the device `w` had then; `w` rebound to a host copy later does not move it.
    code = ("import torch\ndef forward(w):\n    w = w.cuda()\n    orig = w.device\n    w = w.cpu()\n"
            "    TARGET = orig\n")
    node, line = expression(code)
    assert classify_device(facts_for(code), node, line) is Device.CUDA


def test_a_binding_does_not_reach_its_own_value():
    # `ends` inside the value of its own rebinding is the host tensor bound before it, not the result.
    code = ("import torch\ndef forward(mask, c):\n    ends = mask.cpu().nonzero()\n    ends = torch.cat([\n"
            "        ends,\n        torch.tensor([c], device=ends.device),\n    ])\n")
    tree = ast.parse(code)
    device = next(node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "device")
    assert classify_device(FileFacts(tree, LineIndex(code)), device, device.lineno) is Device.NOT_CUDA


def test_a_device_taken_from_a_tensor_built_on_its_own_device_ends():
    # The name's binding in the loop reads the name's own device: classified once, then unknown, not forever.
    code = ("import torch\ndef forward(xs):\n    acc = xs[0]\n    for x in xs:\n"
            "        acc = torch.cat([acc, torch.zeros(1, device=acc.device)])\n    TARGET = acc.device\n")
    node, line = expression(code)
    assert classify_device(facts_for(code), node, line) is Device.UNKNOWN


@pytest.mark.parametrize(("value", "expected"), [
    ("[1, 2]", Data.HOST), ("[i for i in range(3)]", Data.HOST), ("3.5", Data.HOST), ("t.tolist()", Data.HOST),
    ("lens_cpu", Data.LIKELY_HOST), ("meta.seq_lens_cpu", Data.LIKELY_HOST), ("np.arange(3)", Data.LIKELY_HOST),
    ("t.cuda()", Data.TENSOR), ("torch.zeros(3)", Data.TENSOR), ("values", Data.UNKNOWN),
    # A slice is what it slices; an item of a numpy array or a host mirror is host data, of a list anything.
    ("np.arange(3)[1:]", Data.LIKELY_HOST), ("[1, 2][1:]", Data.HOST), ("t.cuda()[1:]", Data.TENSOR),
    ("lens_cpu[0]", Data.LIKELY_HOST), ("[t, t][0]", Data.UNKNOWN), ("values[0]", Data.UNKNOWN),
    ("rows_list[0]", Data.UNKNOWN), ("np.eye(3) @ np.ones(3)", Data.LIKELY_HOST), ("lens_cpu * 2", Data.LIKELY_HOST),
    ("np.eye(3) @ values", Data.UNKNOWN), ("np.ones(3) + t.cuda()", Data.UNKNOWN),
    # what torch makes is a tensor, unless it is a model, a stream or another object
    ("torch.nn.utils.rnn.pad_sequence(values)", Data.TENSOR), ("torch.cuda.FloatTensor(values)", Data.TENSOR),
    ("torch._inductor.aoti_load_package(values)", Data.UNKNOWN), ("torch.cuda.Stream()", Data.UNKNOWN),
    ("torch.load(values)", Data.UNKNOWN), ("torch.nn.functional.pad(t, (1, 1))", Data.TENSOR),
    ("torch.utils.checkpoint.checkpoint(f, t)", Data.TENSOR), ("torch.sparse.mm(t, t)", Data.TENSOR),
])
def test_classify_data(value, expected):
    code = f"import torch\nimport numpy as np\ndef forward(t, lens_cpu, meta, values, rows_list):\n    TARGET = {value}\n"
    node, line = expression(code)
    assert classify_data(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("loop", "expected"), [
    ("for TARGET in preds:", Data.LIKELY_HOST), ("for i, TARGET in enumerate(preds):", Data.LIKELY_HOST),
    ("for TARGET, y in zip(preds, ys):", Data.LIKELY_HOST), ("for y, TARGET in zip(preds, ys):", Data.UNKNOWN),
    ("for TARGET in ys:", Data.UNKNOWN), ("for TARGET in rows_list:", Data.UNKNOWN),
    # a Python list, which only its `*_list` spelling calls host data, may hold CUDA tensors
    ("for TARGET in rows_list[1:]:", Data.UNKNOWN), ("for TARGET in rest:", Data.UNKNOWN),
])
def test_an_item_of_a_numpy_array_or_host_mirror_is_host_data(loop, expected):
    code = ("import numpy as np\ndef forward(x, ys, rows_list):\n    preds = x.cpu().numpy().astype(np.int64)\n"
            f"    rest = rows_list[1:]\n    {loop}\n        print(TARGET)\n")
    tree = ast.parse(code)
    facts = facts_for(code)
    use = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print")
    assert classify_data(facts, use.args[0], use.lineno) is expected


def test_a_name_sliced_in_a_loop_keeps_what_it_held():
    code = ("import numpy as np\ndef split(o, n):\n    idxs = np.arange(len(o))\n    for _ in range(n):\n"
            "        TARGET = idxs\n        idxs = idxs[:-3]\n")
    node, line = expression(code)
    assert classify_data(facts_for(code), node, line) is Data.LIKELY_HOST
    moved = code.replace("idxs[:-3]", "torch.as_tensor(idxs).cuda()")
    assert classify_data(facts_for(moved), *expression(moved)) is Data.UNKNOWN


@pytest.mark.parametrize(("value", "expected"), [
    ("t.cuda()", Placement.GPU), ("t.to('cuda:0')", Placement.GPU), ("torch.zeros(3, device='cuda')", Placement.GPU),
    ("t.cpu()", Placement.HOST), ("torch.from_numpy(a)", Placement.HOST), ("torch.arange(4)", Placement.HOST),
    ("t.to(x.device)", Placement.UNKNOWN), ("t", Placement.UNKNOWN), ("seq_lens_cpu", Placement.HOST),
    # Computations on host tensors and Python numbers alone stay on the host; an unknown operand may be on the GPU.
    ("(torch.as_tensor(a) > 0).all()", Placement.HOST), ("torch.arange(4) * 2 - 1", Placement.HOST),
    ("seq_lens_cpu + t", Placement.UNKNOWN), ("torch.maximum(t.cpu(), seq_lens_cpu)", Placement.HOST),
    ("torch.cuda.get_rng_state(x)[:8]", Placement.HOST), ("torch.get_rng_state()", Placement.HOST),
    ("torch.asarray(torch.arange(4), device='cuda')", Placement.GPU),
    ("torch.asarray(torch.arange(4), device=x.device)", Placement.UNKNOWN),
    ("torch.sum(torch.arange(4), dtype=torch.float64)", Placement.HOST),
    # the legacy constructors: `torch.LongTensor` is a CPU tensor's type, `torch.cuda.LongTensor` a CUDA tensor's
    ("torch.LongTensor(a)", Placement.HOST), ("torch.cuda.LongTensor(a)", Placement.GPU),
    # and `.type()` to one converts to it: to the host, or to a CUDA device; a dtype keeps the placement
    ("t.type(torch.BoolTensor)", Placement.HOST), ("t.type('torch.cuda.FloatTensor')", Placement.GPU),
    ("t.cuda().type(torch.float16)", Placement.GPU),
])
def test_classify_placement(value, expected):
    code = f"import torch\ndef forward(t, a, x, seq_lens_cpu):\n    TARGET = {value}\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("call", "expected"), [
    # `.numpy()` raises for a CUDA tensor: a call whose data reads `x.numpy()` before its `device=x.device` makes
    # a host tensor.
    ("torch.tensor(blur(x.numpy(), s), device=x.device)", Device.NOT_CUDA),
    ("torch.tensor(blur(sample.image.detach().numpy()), device=sample.image.device)", Device.NOT_CUDA),
    ("torch.as_tensor(f(g(im=x.numpy())), device=x.device)", Device.NOT_CUDA),
    # ... not where that read may not run, nor for another tensor, after `.cpu()`, or on `self` (a method)
    ("torch.tensor(x.numpy() if flag else s, device=x.device)", Device.UNKNOWN),
    ("torch.tensor(flag and x.numpy(), device=x.device)", Device.UNKNOWN),
    ("torch.tensor(f(lambda: x.numpy()), device=x.device)", Device.UNKNOWN),
    ("torch.tensor([u.numpy() for u in x], device=x.device)", Device.UNKNOWN),
    ("torch.tensor(lo < s < x.numpy(), device=x.device)", Device.UNKNOWN),
    ("torch.tensor(y.numpy(), device=x.device)", Device.UNKNOWN),
    ("torch.tensor(x.cpu().numpy(), device=x.device)", Device.UNKNOWN),
    ("torch.tensor(self.numpy(), device=self.device)", Device.UNKNOWN),
])
def test_the_device_of_a_tensor_its_call_reads_as_numpy_is_no_cuda_device(call, expected):
    code = f"import torch\ndef blur_all(self, x, y, s, sample, flag, lo):\n    made = {call}\n"
    facts = facts_for(code)
    made = facts.tree.body[1].body[0].value  # the facts' own tree: the calls around the device count
    device = next(keyword.value for keyword in made.keywords if keyword.arg == "device")
    assert classify_device(facts, device, 3) is expected


def test_a_tensor_read_as_numpy_by_an_earlier_statement_may_have_moved():
    code = ("import torch\ndef forward(sample, sigma):\n    a = gaussian(sample.image.numpy(), sigma)\n"
            "    return torch.tensor(a, device=sample.image.device)\n")
    assert [f.code for f in lint(code, "HDL101")] == ["HDL101"]
    assert lint(code.replace("torch.tensor(a, ", "torch.tensor(gaussian(sample.image.numpy(), sigma), "), "HDL101") == []


def test_code_context():
    code = ("import torch\nclass M:\n    def __init__(self):\n        self.a = 1\n"
            "    def forward(self, x):\n        for i in range(3):\n            x = x + 1\n        return x\n"
            "def capture(g):\n    with torch.cuda.graph(g):\n        y = 1\n"
            "def outer():\n    for i in range(2):\n        def inner():\n            return 1\n")
    facts = facts_for(code)
    assert context_at(facts, 4).cold and not context_at(facts, 4).hot
    assert context_at(facts, 7).in_loop and context_at(facts, 7).hot_function
    assert context_at(facts, 8).hot and not context_at(facts, 8).in_loop
    assert context_at(facts, 11).in_graph_capture
    assert not context_at(facts, 15).in_loop, "a function defined in a loop does not run in it"
    assert context_at(facts, 1).cold


@pytest.mark.parametrize(("name", "configured", "expected"), [
    ("forward", (), True), ("backward", (), True), ("forward_batch_generation", (), True), ("run_batch", (), True),
    ("init_forward_metadata", (), True), ("init_forward_metadata_target_verify", (), True),
    ("init_forward_metadata_replay_cuda_graph", (), True), ("_init_frozen_kv_metadata_replay_cuda_graph", (), True),
    ("init_forward_metadata_capture_cuda_graph", (), False), ("prepare_for_decode", (), True),
    ("prepare_for_caching_req", (), False), ("verify", (), False), ("helper", (), False),
    ("verify", ("verify",), True), ("run_policy_step", ("run_*_step",), True), ("run_eval", ("run_*_step",), False),
    # A training step by its words: named for training and for one step, batch or iteration of it.
    ("_train_batch", (), True), ("train_one_step", (), True), ("train_on_batch", (), True),
    ("training_iteration", (), True), ("train_epoch", (), False), ("train_dataloader", (), False),
    ("setup_train_step", (), False), ("train", (), False), ("step_count", (), False),
    # Not work off the step, nor a setting or a builder run once.
    ("warmup_train_step", (), False), ("capture_train_step", (), False), ("load_train_batch", (), False),
    ("set_train_batch_size", (), False), ("get_train_micro_batch_size_per_gpu", (), False),
    ("make_train_step", (), False), ("build_train_iter", (), False), ("Train_Batch", (), True),
    ("init_forward_metadata_capture_cuda_graph", ("*capture*",), True),
])
def test_hot_function_names_and_patterns(name, configured, expected):
    assert is_hot_function(name, frozenset(configured)) is expected


@pytest.mark.parametrize(("name", "expected"), [
    ("batch.seq_lens_gpu", Placement.GPU), ("self.global_num_tokens_gpu", Placement.GPU), ("b.x_cuda", Placement.GPU),
    ("b.seq_lens_cpu", Placement.HOST), ("seq_lens_cpu", Placement.HOST), ("seq_lens_gpu", Placement.UNKNOWN),
    ("t.is_cuda", Placement.UNKNOWN), ("self.use_gpu", Placement.UNKNOWN), ("b.num_gpu", Placement.UNKNOWN),
    ("b.inputs_on_cuda", Placement.UNKNOWN), ("b.gpu", Placement.UNKNOWN), ("self._is_cuda", Placement.UNKNOWN),
    ("self._using_cuda", Placement.UNKNOWN), ("self.used_gpu", Placement.UNKNOWN),  # flags (aimet's winnowing)
    ("b.size_per_gpu", Placement.UNKNOWN),
])
def test_placement_from_attribute_name_suffixes(name, expected):
    code = f"def forward(self, b, t, batch, seq_lens_gpu, seq_lens_cpu):\n    TARGET = {name}\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("parameter", "expected"), [
    ("parallel_gpu=1", Placement.UNKNOWN), ("parallel_gpu: int", Placement.UNKNOWN),
    ("parallel_gpu=None", Placement.GPU), ("parallel_gpu", Placement.GPU),
])
def test_an_attribute_named_gpu_that_holds_a_number_is_no_tensor(parameter, expected):
    # `self.parallel_gpu = parallel_gpu` of a parameter with a number default (or an `int` annotation) is a count of
    # devices (OpenNMT's tensor parallelism), whatever its `_gpu` name says.
    code = (f"class FFN:\n    def __init__(self, {parameter}):\n        self.parallel_gpu = parallel_gpu\n\n"
            "    def forward(self, x):\n        TARGET = self.parallel_gpu\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("name", "expected"), [
    ("batch.seq_lens", Placement.GPU), ("other.seq_lens", Placement.GPU), ("batch.input_ids", Placement.UNKNOWN),
    ("self.seq_lens", Placement.GPU), ("self.ids", Placement.HOST), ("out_cache_loc", Placement.GPU),
    ("lens", Placement.UNKNOWN), ("prefix_lens", Placement.UNKNOWN), ("x", Placement.UNKNOWN),
    ("rows", Placement.UNKNOWN), ("batch.cpp_wrapper", Placement.UNKNOWN), ("batch.move_to", Placement.UNKNOWN),
])
def test_placement_from_host_mirror_names(name, expected):
    code = ("import torch\nfrom x.cpp_wrapper_cpu import W\nclass B:\n    def __init__(self):\n"
            "        self.ids = torch.arange(3)\n        self.ids_cpu = self.ids\n"
            "    def step(self, batch, other, out_cache_loc, out_cache_loc_cpu, lens, prefix_lens, rows_cpu):\n"
            "        lens = lens[:2]\n        for x in rows_cpu:\n            pass\n"
            "        a = batch.seq_lens_cpu, batch.move_to_cpu\n"
            f"        TARGET = {name}\n"
            "def helper(prefix_lens_cpu, lens_cpu, x_cpu):\n    pass\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected
    if expected is Placement.GPU:
        assert has_gpu_evidence(code), "the file-level evidence test must admit what classify_placement finds"


@pytest.mark.parametrize(("mirror", "expected"), [
    ("tags.view(-1).tolist()", Placement.GPU), ("tags.cpu()", Placement.GPU), ("tags.to('cpu')", Placement.GPU),
    ("tags.cpu() if tags is not None else None", Placement.GPU),
    ("tags.view(-1).to(dtype=torch.long)", Placement.UNKNOWN),  # no host copy: says nothing of where `tags` is
])
def test_a_parameter_is_the_device_copy_only_when_its_mirror_is_a_host_copy_of_it(mirror, expected):
    code = f"import torch\ndef step(tags):\n    tags_host = {mirror}\n    TARGET = tags\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("code", "expected"), [
    ("def forward(b):\n    return b.lens, lens_cpu\n", True),
    ("def forward(b):\n    return (b.\\\n            lens), lens_cpu\n", True),
    ("def forward(b):\n    return (b.  # c\n            lens.sum()), lens_cpu\n", True),
    ("def forward(lens, lens_cpu):\n    pass\n", True),
    ("def forward(lens: int = 0):\n    return lens_cpu\n", True),
    ("f = lambda lens: lens_cpu\n", True),
    ("def forward(*lens  # c\n      ):\n    return lens_cpu\n", True),
    ("lens_cpu = load()\nprint(lens + 1)\n", False),
    ("lens_cpu = load()\nlens.append(lens_cpu)\n", False),
    ("lens_cpu = load()\nif lens == 1:\n    lens_of_x = 2\n", False),
    ("x = a.lens_cpu + b.plens\nlens  # comment\n", False),
])
def test_a_mirrored_name_is_gpu_evidence_where_it_follows_a_dot_or_may_be_a_parameter(code, expected):
    assert has_gpu_evidence(code) is expected


@pytest.mark.parametrize(("code", "expected"), [
    ("d = 'cuda'\n", True), ('d = "cuda:1"\n', True), ('d = """cuda"""\n', True), ("d = f'cuda:{rank}'\n", True),
    ("d = rF'cuda{rank}'\n", True), ("d = 'cuda:' f'{rank}'\n", True), ("d = 'cuda' f':{rank}'\n", True),
    ("name = 'cuda_graph'\n", False), ("d = ' cuda'\n", False), ("kind = 'cuda:{}'.format(rank)\n", False),
    ("x = torch.cuda.is_available()\n", False), ("msg = f'using {dev} cuda'\n", False),
])
def test_a_quoted_cuda_is_gpu_evidence_where_the_string_can_be_a_device(code, expected):
    assert has_gpu_evidence(code) is expected


@pytest.mark.parametrize(("code", "expected"), [
    ("y = x.to('cuda')\n", True), ("t = torch.zeros(3, device=  'cuda')\n", True), ("d = 1 if c else 'cuda'\n", True),
    ("d = 1 if c else'cuda'\n", True), ("d = (\n    # c\n    'cuda')\n", True), ("def forward():\n    return 'cuda'\n", True),
    ("d = '' 'cuda'\n", True), ("print((d := 'cuda'))\n", True), ("d = \\\n    'cuda'\n", True),
    # where classify_device reads no device: compared, a later argument, in a collection, in a comment
    ("if d.type == 'cuda':\n    pass\n", False), ("ok = d != 'cuda'\n", False), ("xs = ('cpu', 'cuda')\n", False),
    ("f(a,\n  'cuda')\n", False), ("x = {'a': 'cuda'}\n", False), ("x = 1  # device='cuda'\n", False), ("y = 'cpu' if d == 'cuda' else d\n", False),
])
def test_a_device_string_is_gpu_evidence_where_a_device_may_be_read(code, expected):
    assert has_gpu_evidence(code) is expected


def test_no_host_mirror_placement_for_other_accelerators():
    code = "import torch_npu\ndef step(batch):\n    TARGET = batch.seq_lens\n    return batch.seq_lens_cpu\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is Placement.UNKNOWN
    assert not has_gpu_evidence(code)


@pytest.mark.parametrize(("assigned", "expected"), [
    ("{}", Placement.UNKNOWN),  # vLLM's encoder-only state: a dict of tensors by request
    ("[]", Placement.UNKNOWN),
    ("None", Placement.GPU),
    ("make()", Placement.GPU),
    ("ids != pad", Placement.GPU),  # a comparison of tensors is a tensor
    ("a or make()", Placement.GPU),
    ("{}\n        self.token_type_ids = make()", Placement.GPU),  # one assignment of no tensor among others
])
def test_an_attribute_the_class_assigns_no_tensor_is_no_mirrored_tensor(assigned, expected):
    code = (f"import torch\nclass State:\n    def __init__(self):\n        self.token_type_ids = {assigned}\n\n"
            "    def prepare_inputs(self, n):\n        TARGET = self.token_type_ids\n"
            "        token_type_ids_cpu = torch.zeros(n)\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


def test_configured_hot_function_globs_make_code_hot():
    code = "def run_policy_step(x):\n    return x\n"
    assert context_at(facts_for(code), 2, frozenset({"run_*_step"})).hot_function
    assert not context_at(facts_for(code), 2).hot_function


@pytest.mark.parametrize(("value", "expected"), [
    ("(t.cuda() > 0).any()", Placement.GPU), ("torch.isnan(t.cuda())", Placement.GPU),
    ("torch.cat([t.cuda(), a])", Placement.GPU), ("t.cuda().float()[1:] * 2", Placement.GPU),
    ("t.cuda().to(torch.float16)", Placement.GPU), ("t.cuda().size(0)", Placement.UNKNOWN),
    ("self.buf", Placement.GPU), ("self.host", Placement.HOST), ("self.mixed", Placement.UNKNOWN),
    ("torch.nn.Linear(2, 2).cuda()", Placement.UNKNOWN), ("err", Placement.GPU),
    # a method that asks or gets something returns no tensor, of a tensor or of a model moved to the GPU
    ("self.buf.flip(0)", Placement.GPU), ("self.buf.is_dp_last_group()", Placement.UNKNOWN),
    ("self.buf.get_slot(0)", Placement.UNKNOWN),
])
def test_placement_follows_tensor_computations_and_self_attributes(value, expected):
    code = ("import torch\nclass M:\n    def __init__(self, t, d):\n"
            "        self.buf = torch.zeros(3, device='cuda')\n        self.host = t.cpu()\n        self.mixed = d\n"
            "    def forward(self, t, a):\n        err = torch.ones((), device='cuda')\n        err /= 2\n"
            f"        TARGET = {value}\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


# Each way an expression can classify as a CUDA tensor, with the text that makes it so (TARGET's value).
GPU_SOURCES = [
    "import torch\nTARGET = x.cuda()\n",
    "import torch\nTARGET = torch.zeros(3, device='cuda')\n",
    "import torch\nTARGET = torch.zeros(3, device=f'cuda:{rank}')\n",
    "import torch\nTARGET = x.to(0)\n",
    "import torch\nTARGET = torch.ones(2, device=torch.device(1))\n",
    "import torch\nTARGET = torch.ones(2, device=torch.cuda.current_device())\n",
    "import torch\nTARGET = batch.seq_lens_gpu\n",
    "import torch\ndef forward(seq_lens, seq_lens_cpu):\n    TARGET = seq_lens\n",
    "import torch\nTARGET = forward_batch.seq_lens + 1\nn = forward_batch.seq_lens_cpu\n",
    "import torch\nimport torch.distributed as dist\ndef forward(n, device):\n    t = torch.zeros(n, device=device)\n    TARGET = t\n"
    "    dist.all_reduce(t)\n",
]


@pytest.mark.parametrize("code", GPU_SOURCES)
def test_gpu_placement_always_comes_with_gpu_evidence(code):
    # The sync finder skips its CUDA-only checks in files without GPU evidence: every source of a
    # CUDA placement must be something has_gpu_evidence sees.
    value, line = expression(code)
    assert classify_placement(facts_for(code), value, line) is Placement.GPU
    assert has_gpu_evidence(code)


def test_nothing_classifies_as_gpu_in_rule_examples_without_gpu_evidence():
    from h2dlint.rule import all_rules

    samples = [example.code for rule in all_rules().values()
               for example in (*rule.valid_examples, *rule.invalid_examples)]
    checked = 0
    for code in samples:
        if has_gpu_evidence(code):
            continue
        checked += 1
        facts = facts_for(code)
        for node in ast.walk(facts.tree):
            if isinstance(node, ast.expr):
                assert classify_placement(facts, node, node.lineno) is not Placement.GPU, (code, ast.unparse(node))
    assert checked > 20

@pytest.mark.parametrize(("collective", "expected"), [
    ("dist.all_reduce(t, group=group)", Placement.GPU), ("torch.distributed.broadcast(t, src=0)", Placement.GPU),
    ("dist.all_gather_into_tensor(out, t)", Placement.GPU), ("dist.all_gather(outs, tensor=t)", Placement.GPU),
    ("all_reduce(t)", Placement.GPU),  # `from torch.distributed import all_reduce`
    ("dist.all_gather(t, out)", Placement.UNKNOWN),  # `all_gather`'s first argument is the output list
    ("dist.all_reduce(t, group=get_world_group().cpu_group)", Placement.UNKNOWN),
    ("dist.all_reduce(t, group=grp)", Placement.UNKNOWN), ("dist.all_reduce(t, group=self.group)", Placement.UNKNOWN),
    ("other.all_reduce(t)", Placement.UNKNOWN), ("dist.all_reduce(t.clone())", Placement.UNKNOWN),
])
def test_a_tensor_passed_to_a_collective_is_on_the_device(collective, expected):
    code = ("import torch\nimport torch.distributed as dist\nfrom torch.distributed import all_reduce\n"
            "class C:\n    def __init__(self):\n        self.group = get_world_group().cpu_group\n"
            "    def run(self, n, device, group, out, outs, other):\n"
            "        grp = new_group(ranks, backend=HOST_BACKEND_CPU)\n        t = torch.zeros(4, n, device=device)\n"
            f"        TARGET = t\n        {collective}\n        return t\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected
    if expected is Placement.GPU:
        assert has_gpu_evidence(code), "the file-level evidence test must admit what classify_placement finds"


def test_collective_placement_needs_the_tensor_that_reaches_the_collective():
    code = ("import torch\nimport torch.distributed as dist\n"
            "def forward(p, n, d):\n    h = torch.zeros(n)\n    t = torch.zeros(n, device=d)\n    dist.all_reduce(h)\n"
            "    dist.all_reduce(t)\n    dist.all_reduce(p)\n    t = t.tolist()\n    return t, h\n")
    facts = facts_for(code)
    assert classify_placement(facts, ast.Name("t"), 6) is Placement.GPU
    assert classify_placement(facts, ast.Name("t"), 10) is Placement.UNKNOWN, "rebound after the collective"
    assert classify_placement(facts, ast.Name("h"), 6) is Placement.HOST, "a host tensor stays one (gloo)"
    assert classify_placement(facts, ast.Name("p"), 8) is Placement.UNKNOWN, "a parameter: the caller's tensor"


def test_no_collective_placement_in_a_function_that_may_pick_the_host():
    code = ("import torch\nimport torch.distributed as dist\n"
            "def forward(n, force_cpu):\n    d = torch.device('cpu' if force_cpu else 'cuda')\n"
            "    t = torch.zeros(n, device=d)\n    dist.broadcast(t, src=0)\n")
    assert classify_placement(facts_for(code), ast.Name("t"), 6) is Placement.UNKNOWN


def test_no_collective_placement_in_a_file_that_names_the_gloo_backend():
    code = ("import torch\nimport torch.distributed as dist\nBACKENDS = ['nccl', 'gloo']\n"
            "def forward(t):\n    dist.all_reduce(t)\n")
    assert classify_placement(facts_for(code), ast.Name("t"), 5) is Placement.UNKNOWN
    assert not has_gpu_evidence(code)


@pytest.mark.parametrize(("value", "expected"), [
    ("torch.cat([torch.arange(3), t.cpu()])", Placement.HOST), ("torch.stack((a.cpu(), b.cpu()))", Placement.HOST),
    ("torch.concat([torch.arange(n) for n in lens])", Placement.HOST),
    ("torch.vstack(tensors=[torch.zeros(2) for _ in lens])", Placement.HOST),
    ("torch.cat(host_parts)", Placement.HOST), ("torch.cat(appended)", Placement.HOST),
    ("torch.cat([torch.arange(3), t])", Placement.UNKNOWN), ("torch.cat([])", Placement.UNKNOWN),
    ("torch.cat([*parts])", Placement.UNKNOWN), ("torch.cat(empty)", Placement.UNKNOWN),
    ("torch.cat(extended)", Placement.UNKNOWN), ("torch.cat(mixed)", Placement.UNKNOWN),
    ("torch.cat([torch.arange(3), t.cuda()])", Placement.GPU),
])
def test_joining_host_tensors_gives_a_host_tensor(value, expected):
    code = ("import torch\ndef forward(t, a, b, lens, parts, others):\n"
            "    host_parts = [torch.arange(3), torch.ones(2)]\n    appended = []\n    empty = []\n    extended = []\n    mixed = []\n"
            "    for n in lens:\n        appended.append(torch.arange(n))\n        extended.extend(others)\n"
            "        mixed.append(torch.arange(n))\n        mixed.append(t)\n"
            f"    TARGET = {value}\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("value", "expected"), [
    ("self.table", Placement.HOST), ("self.cached", Placement.HOST), ("self.table[ids.cpu()]", Placement.HOST),
    ("self.maybe", Placement.UNKNOWN),  # None on one path
    ("self.moved", Placement.UNKNOWN), ("self.on_gpu", Placement.GPU),
    ("self.inv_freq", Placement.UNKNOWN),  # a buffer: it moves with the module
    ("self.scale", Placement.UNKNOWN),  # a parameter, likewise
    ("self.plain", Placement.HOST),  # a plain tensor attribute does not move with the module
])
def test_placement_of_properties_and_module_tensors(value, expected):
    code = ("import torch\nfrom functools import cached_property\nclass M(torch.nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.register_buffer('inv_freq', None, persistent=False)\n        self.inv_freq = torch.arange(n)\n"
            "        self.register_parameter(name='scale', param=None)\n        self.scale = torch.ones(n)\n"
            "        self.plain = torch.zeros(n)\n"
            "    @property\n    def table(self):\n        mapping = torch.zeros(10, dtype=torch.int)\n"
            "        for k in range(10):\n            mapping[k] = k\n        return mapping\n"
            "    @cached_property\n    def cached(self):\n        def helper():\n"
            "            return torch.ones(3, device='cuda')\n        return torch.arange(4)\n"
            "    @property\n    def maybe(self):\n        if self.flag:\n            return None\n"
            "        return torch.zeros(3)\n"
            "    @property\n    def moved(self):\n        return torch.zeros(3).to(self.device)\n"
            "    @property\n    def on_gpu(self):\n        return self.plain.cuda()\n"
            f"    def forward(self, ids):\n        TARGET = {value}\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


@pytest.mark.parametrize(("value", "expected"), [
    ("torch.arange(n) >= pos", Placement.HOST), ("(torch.arange(n) < lens[:, None]).int()", Placement.HOST),
    ("torch.ones((n, 1), dtype=torch.int) == eol", Placement.HOST), ("row != 1", Placement.HOST),
    ("pos < torch.tensor([1, 2])", Placement.HOST), ("(torch.arange(n) % pos) == 0", Placement.HOST),
    ("torch.cat([torch.arange(n)]) > pos", Placement.HOST),
    ("torch.tensor(3) < pos", Placement.UNKNOWN),  # a 0-d host tensor may join a CUDA one
    ("torch.zeros(n) < pos", Placement.UNKNOWN),  # `n` may be a shape, even `()`
    ("torch.arange(n) < pos.cuda()", Placement.GPU), ("torch.arange(n, device=d) < pos", Placement.UNKNOWN),
    ("torch.arange(n) * pos", Placement.UNKNOWN),  # arithmetic is left unknown (see classify_placement)
])
def test_a_comparison_with_a_host_tensor_with_dimensions_gives_a_host_tensor(value, expected):
    code = ("import torch\ndef forward(n, pos, lens, eol, d):\n    row = torch.zeros(2, 3)\n"
            f"    TARGET = {value}\n")
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is expected


def test_configured_gpu_device_names_are_cuda_devices():
    code = "import torch\ndef forward(self, device, other):\n    local = 'cpu'\n    TARGET = (device, self.device, other, local)\n"
    node, line = expression(code)
    facts = facts_for(code)
    facts.gpu_device_names = frozenset({"device", "self.device", "local"})
    assert [classify_device(facts, element, line) for element in node.elts] == [
        Device.CUDA, Device.CUDA, Device.UNKNOWN, Device.NOT_CUDA]
    assert has_gpu_evidence(code, ("device",)) and not has_gpu_evidence(code)
    # However the name is spaced where it is used, as the `ast` sees it.
    assert has_gpu_evidence("x.to(self .\\\n  device)", ("self.device",))
    assert has_gpu_evidence("x.to((self.  # the device\n  device))", ("self.device",))


def test_annotations_are_not_indexed_but_defaults_and_bodies_are():
    """Annotations hold types: their subscripts and calls are no candidates for any rule (and skipping them
    spares the sync finder 41% of sglang's subscripts). Default values and bodies are code, and stay."""
    code = ("import torch\n"
            "def forward(x: Optional[torch.Tensor], n: Annotated[int, field()] = len([1].copy()))"
            " -> Dict[str, torch.Tensor]:\n"
            "    y: List[int] = x[x > 0].tolist()\n"
            "    return {'a': y}\n")
    facts = facts_for(code)
    subscripts = [ast.unparse(node) for node in facts.scanned_nodes if isinstance(node, ast.Subscript)]
    assert subscripts == ["x[x > 0]"]
    assert sorted(ast.unparse(call) for call in facts.calls_named(frozenset({"field", "copy", "tolist"}))) \
        == ["[1].copy()", "x[x > 0].tolist()"]


# The per-file facts come from the tree: a word in a comment or a string proves nothing.
@pytest.mark.parametrize(("code", "mirrored"), [
    ("def forward(batch):\n    return batch.seq_lens, batch.seq_lens_cpu\n", {"seq_lens"}),
    ("def forward(seq_lens, seq_lens_host):\n    pass\n", {"seq_lens"}),
    ("def forward(batch):\n    return batch.seq_lens  # see seq_lens_cpu\n", set()),  # the mirror only in a comment
    ("def forward(batch):\n    '''seq_lens_cpu mirrors it'''\n    return batch.seq_lens\n", set()),  # in a docstring
    ("def forward(batch):\n    return batch.seq_lens_cpu  # seq_lens\n", set()),  # the name only in a comment
    ("def forward(batch):\n    return batch.is_cpu, batch.is_\n", set()),  # a flag, not a mirror
    ("import torch_npu\ndef forward(b):\n    return b.seq_lens, b.seq_lens_cpu\n", set()),  # another accelerator
])
def test_mirrored_names_are_names_of_the_tree(code, mirrored):
    assert facts_for(code).evidence.mirrored == mirrored


def test_a_mirror_in_a_comment_makes_no_cuda_tensor():
    code = "def forward(batch):\n    TARGET = batch.seq_lens  # batch.seq_lens_cpu is the host copy\n"
    node, line = expression(code)
    assert classify_placement(facts_for(code), node, line) is Placement.UNKNOWN
    used = code.replace("  # batch.seq_lens_cpu is the host copy", "\n    host = batch.seq_lens_cpu")
    node, line = expression(used)
    assert classify_placement(facts_for(used), node, line) is Placement.GPU


@pytest.mark.parametrize(("code", "expected"), [
    ("s = torch.cuda.Stream()\n", True), ("other.wait_stream(s)\n", True), ("with torch.cuda.stream(s):\n    pass\n",
                                                                            True),
    ("x.record_stream(s)\n", True), ("# torch.cuda.Stream()\ns = 'wait_stream(s)'\n", False),
    ("s = torch.cuda.current_stream()\n", False),
])
def test_streams_are_calls_of_the_tree(code, expected):
    assert facts_for(code).uses_several_streams is expected


COLLECTIVE = "import torch\nimport torch.distributed as dist\ndef forward(n):\n    t = torch.zeros(n)\n    {call}\n    TARGET = t\n"


@pytest.mark.parametrize(("call", "expected"), [
    ("dist.all_reduce(t)", Placement.GPU),
    ("dist.all_reduce(t)  # not on gloo", Placement.GPU),  # a comment names no backend
    ("dist.all_reduce(t, group=self.cpu_group)", Placement.HOST),  # a factory with no device: host, said first
])
def test_a_collective_argument_is_on_the_gpu_unless_the_tree_names_a_host_group(call, expected):
    code = COLLECTIVE.format(call=call).replace("torch.zeros(n)", "make(n)")
    node, line = expression(code)
    found = classify_placement(facts_for(code), node, line)
    assert found is (Placement.GPU if expected is Placement.GPU else Placement.UNKNOWN)


def test_a_host_group_is_named_in_the_tree_not_in_a_comment():
    code = COLLECTIVE.format(call="dist.all_reduce(t)").replace("torch.zeros(n)", "make(n)")
    assert facts_for(code.replace("def forward(n):", "def forward(n):  # gloo elsewhere")).evidence.device_collectives
    assert not facts_for(code.replace("dist.all_reduce(t)", "dist.all_reduce(t)\n    backend = 'gloo'")) \
        .evidence.device_collectives


def test_a_device_from_another_accelerators_api_is_no_cuda_device():
    code = "import torch\ndef forward(rows):\n    return torch.tensor(rows, device=torch.npu.current_device())\n"
    assert lint(code, "HDL101") == []
    assert [f.code for f in lint(code.replace("npu", "cuda"), "HDL101")] == ["HDL101"]


def test_in_a_file_for_another_accelerator_only_a_device_of_unknown_kind_is_no_cuda_device():
    npu = "import torch\nimport torch_npu\ndef forward(rows, device):\n    return torch.tensor(rows, device=device)\n"
    assert lint(npu, "HDL101") == []
    # a file that names CUDA too may run either way: the copy is reported
    both = npu + "def g():\n    return torch.cuda.current_device()\n"
    assert [f.code for f in lint(both, "HDL101")] == ["HDL101"]


@pytest.mark.parametrize(("test", "periodic"), [
    ("step % log_interval == 0", True),
    ("not i % self.eval_every", True),
    ("self.step % self.args.logging_steps == 0 and rank == 0", True),
    ("i % 100 == 0", True),
    ("0 == it % cfg.save_freq", True),
    ("i % 2 == 0", False),  # even and odd micro-batches: both every step
    ("(i + 1) % grad_accum_steps == 0", False),  # the optimizer step, every step
    ("i % n == 0", False),
    ("step % log_interval == 0 or last", False),
    ("step % log_interval != 0", False),
])
def test_periodic_guards_are_told_from_per_step_ones(test, periodic):
    assert periodic_test(ast.parse(test, mode="eval").body) is periodic


@pytest.mark.parametrize(("code", "fills"), [
    ("if key not in _CACHE:\n    _CACHE[key] = make(key)\n", True),
    ("if d not in self._luts:\n    try:\n        self._luts[d] = t.to(d)\n    except RuntimeError:\n        pass\n", True),
    ("if self._buf is None:\n    self._buf = make()\n", True),
    ("if not hasattr(self, '_ind'):\n    self._ind = make()\n", True),
    ("if lut is None or lut.device != device:\n    lut = make()\n    _LUT_CACHE[device] = lut\n", True),
    ("if cache_length == 0 or self.rope_deltas is None:\n    self.rope_deltas = make()\n", False),  # every prefill
    ("if mask is None:\n    mask = make()\n", False),  # a default made on every call
    ("if key not in seen:\n    count += 1\n", False),
    ("if self._buf is None:\n    other = make()\n", False),
    # a flag of the object that the body clears (or sets): the body runs once per object
    ("if self._uninitialized:\n    self._create(x)\n    self._uninitialized = False\n", True),
    ("if not self._ready:\n    self._setup()\n    self._ready = True\n", True),
    ("if self._uninitialized:\n    self._create(x)\n    self._uninitialized = True\n", False),
    ("if self.training:\n    loss = make()\n", False),
    ("if self._dirty:\n    self._dirty = compute()\n", False),  # not a constant: may stay set
    ("if uninitialized:\n    uninitialized = False\n", False),  # a local: every call
    # nn.Module stores attributes by registering them too
    ("if not hasattr(self, 'freqs'):\n    self.register_buffer('freqs', make(), persistent=False)\n", True),
    ("if self._t is None:\n    setattr(self, '_t', make())\n", True),
    ("if self._t is None:\n    self.register_buffer('_other', make())\n", False),
])
def test_an_if_that_fills_a_cache_is_told_from_one_that_makes_a_default(code, fills):
    assert fills_a_cache(ast.parse(code).body[0]) is fills


def test_a_cache_filled_by_a_method_of_the_file_is_a_cache():
    # d3rlpy's scalers: the method the block calls stores what the test asks for
    code = ("def transform(self, x):\n    if self._t_min is None or self._t_max is None:\n"
            "        self._set_torch_value(x.device)\n    return x\n\n\n"
            "def _set_torch_value(self, device):\n    self._t_min = make(device)\n    self._t_max = make(device)\n")
    tree = ast.parse(code)
    test = tree.body[0].body[0]
    assert fills_a_cache(test, lambda: flag_uses(tree)) is True
    # a method that stores something else fills no cache
    tree = ast.parse(code.replace("self._t_max = make(device)", "self._other = make(device)"))
    assert fills_a_cache(tree.body[0].body[0], lambda: flag_uses(tree)) is False


@pytest.mark.parametrize(("body", "once"), [
    # neuralforecast's IQLoss: the flag is set after the block, by the rest of the function
    ("if not self.has_sampled:\n    self._init(device)\nq = self.distr.sample(n)\nself.has_sampled = True\n", True),
    ("if self._fresh:\n    self._build()\nfor x in xs:\n    use(x)\nself._fresh = False\n", True),
    # the function may leave before it sets the flag
    ("if not self.has_sampled:\n    self._init(device)\nif n == 0:\n    return None\nself.has_sampled = True\n", False),
    ("if not self.has_sampled:\n    self._init(device)\nself.has_sampled = compute()\n", False),
    # the block itself may leave before the flag is set: it runs again at the next call
    ("if not self.has_sampled:\n    return self._init(device)\nself.has_sampled = True\n", False),
    ("for x in n:\n    if not self.has_sampled:\n        self._init(x)\n    if x:\n        break\n"
     "    self.has_sampled = True\n", False),
    ("for x in n:\n    if not self.has_sampled:\n        self._init(x)\n    self.has_sampled = True\n", True),
])
def test_a_flag_the_statements_after_an_if_set_makes_its_block_run_once_per_object(body, once):
    tree = ast.parse("def sample(self, n, device):\n" + textwrap.indent(body, "    "))
    test = next(node for node in ast.walk(tree) if isinstance(node, ast.If))
    assert fills_a_cache(test, lambda: flag_uses(tree)) is once
    # set back the other way in another method: the block runs again
    tree = ast.parse("def sample(self, n, device):\n" + textwrap.indent(body, "    ")
                     + "\n\ndef reset(self):\n    self.has_sampled = False\n    self._fresh = True\n")
    assert fills_a_cache(next(node for node in ast.walk(tree) if isinstance(node, ast.If)),
                         lambda: flag_uses(tree)) is False


def test_a_flag_set_again_by_a_function_nested_in_the_constructor_is_armed():
    # the hook runs later, every time it is called: the flag may be set again
    code = ("class A:\n    def __init__(self):\n        self._ready = False\n        def hook():\n"
            "            self._ready = False\n        register(hook)\n\n"
            "    def step(self):\n        if not self._ready:\n            self._ready = True\n            build()\n")
    tree = ast.parse(code)
    uses = flag_uses(tree)
    assert uses.armed == {"self._ready": {"falsy", "truthy"}}  # the hook's, and `step`'s own
    # what a nested function stores, its enclosing functions store too (`self._set()` runs what they run)
    assert [target.attr for target in uses.method_stores["__init__"]] == ["_ready", "_ready"]
    assert [target.attr for target in uses.method_stores["hook"]] == ["_ready"]
    test = next(node for node in ast.walk(tree) if isinstance(node, ast.If))
    assert fills_a_cache(test, lambda: uses) is False
    without_hook = code.replace("        def hook():\n            self._ready = False\n        register(hook)\n", "")
    tree = ast.parse(without_hook)
    assert fills_a_cache(next(node for node in ast.walk(tree) if isinstance(node, ast.If)),
                         lambda: flag_uses(tree)) is True


def test_the_statement_walk_visits_every_statement_once():
    code = textwrap.dedent("""\
        import os
        class A:
            x = 1
            def f(self):
                try:
                    pass
                except E:
                    with c:
                        y = 2
                else:
                    z = 3
                finally:
                    w = 4
                match v:
                    case 1:
                        for i in r:
                            async def g():
                                async for j in k:
                                    return
                            while t:
                                break
                    case _:
                        pass
        if q:
            del a
        else:
            raise X
        """)
    tree = ast.parse(code)
    walked = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    found = list(statements(tree.body))
    assert len(found) == len(walked) == 21
    assert {id(node) for node in found} == {id(node) for node in walked}

    def depth_first(body):  # a statement, then its blocks, the last block first
        for statement in body:
            yield statement
            for block in reversed([getattr(statement, name) for name in ("body", "orelse", "finalbody")
                                   if getattr(statement, name, None)]
                                  + [handler.body for handler in getattr(statement, "handlers", ())]
                                  + [case.body for case in getattr(statement, "cases", ())]):
                yield from depth_first(block)

    assert found == list(depth_first(tree.body))


def test_spans_held_per_line_are_those_open_on_it():
    import random

    generator = random.Random(7)
    for _ in range(200):
        spans = []
        for index in range(generator.randint(0, 12)):
            first = generator.randint(1, 40)
            spans.append((first, first + generator.randint(0, 15), index))
        table = _held_per_line(spans)
        last = max((span[1] for span in spans), default=0)
        assert len(table) == last + 1
        for line in range(1, last + 1):
            assert table[line] == tuple(item for first, end, item in spans if first <= line <= end)


@pytest.mark.parametrize(("body", "lines"), [
    # after an early return on a hit, what fills the cache runs once per key
    ("if '_t' in self._buffers:\n    return self._t\nt = make()\nself.register_buffer('_t', t)\nreturn self._t\n",
     [4, 5, 6]),
    ("if key in _CACHE:\n    return _CACHE[key]\n_CACHE[key] = make()\nreturn _CACHE[key]\n", [4, 5]),
    ("if self._done is not None:\n    return\nself._done = make()\n", [4]),
    # a local read from a cache, filled when it is None
    ("t = self.buf\nif t is None:\n    self.register_buffer('buf', make())\n    return self.buf\nreturn t\n", [3]),
    ("g = gumbel_map.get(device)\nif g is None:\n    g = make()\n    gumbel_map[device] = g\nreturn g\n", [3]),
    # not caches: a default made per call, the caller's container, an early return that fills nothing
    ("if mask is None:\n    mask = make()\nreturn mask\n", []),
    ("v = cache.get(key)\nif v is None:\n    cache[key] = make()\nreturn cache[key]\n", []),
    ("if self.y is not None:\n    return self.y\nreturn make()\n", []),
    ("g = gumbel_map.get(device)\nif g is None:\n    g = make()\n    gumbel_map = {device: g}\nreturn g\n", []),
    # a store under a condition may leave the cache empty: what follows the hit runs every call
    ("if self.out is not None:\n    return self.out\nout = make()\nif self.capture:\n    self.out = out\nreturn out\n",
     []),
    ("t = self.buf\nif t is None:\n    t = make()\n    if keep:\n        self.buf = t\nreturn t\n", []),
    # a name rebound since it was read holds something else
    ("t = self.buf\nt, n = make()\nif t is None:\n    self.buf = make()\nreturn t\n", []),
    ("t = self.buf\nfor t in make():\n    pass\nif t is None:\n    self.buf = make()\nreturn t\n", []),
    # past an early return off the period: once every so many steps
    ("if (step - 1) % self.demo_every != 0 or self.done:\n    return\nnoise = make()\nreturn noise\n", [4, 5]),
    ("if step % self.log_interval:\n    return\nlog(make())\n", [4]),
    ("if not step % self.log_interval == 0:\n    return\nlog(make())\n", [4]),
    ("if 0 != step % self.log_interval:\n    return\nlog(make())\n", [4]),
    # an early return on some other condition, or every other step, leaves the rest per call
    ("if step % 2 != 0:\n    return\nlog(make())\n", []),
    ("if step % self.grad_accumulation_steps != 0:\n    return\nlog(make())\n", []),
    ("if self.done:\n    return\nlog(make())\n", []),
    # `with` blocks and `try` bodies run whenever what holds them runs
    ("if key in _CACHE:\n    return _CACHE[key]\nwith lock:\n    _CACHE[key] = make()\nreturn _CACHE[key]\n", [4, 6]),
    # a hit that also checks the cached table fits (ESPnet's `extend_pe`): the rest runs once per longer input
    ("if self.pe is not None:\n    if self.pe.size(1) >= key.size(1):\n        self.pe = self.pe.to(device)\n"
     "        return\npe = make()\nself.pe = pe.to(device)\n", [6, 7]),
    ("if self.pe is not None and self.pe.size(1) >= key.size(1):\n    return\nself.pe = make()\n", [4]),
    ("pe = self.pe\nif pe is not None and pe.size(1) >= key.size(1):\n    return pe\nself.pe = make()\n", [5]),
    # a check of something else, or no check of the cache at all: the rest may run every call
    ("if self.pe is not None and not self.training:\n    return\nself.pe = make()\n", []),
    ("if self.pe is not None:\n    if keep:\n        return\nself.pe = make()\n", []),
    ("if self.pe is not None:\n    if self.pe.size(1) >= key.size(1):\n        return\nelse:\n    pass\n"
     "self.pe = make()\n", []),
])
def test_the_statements_that_run_once_in_a_while(body, lines):
    code = "def forward(self, key, device, mask, cache, keep, step):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    function = ast.parse(code).body[0]
    assert [statement.lineno for statement in statements_run_once_in_a_while(function)] == lines


@pytest.mark.parametrize(("source", "lines"), [
    # an early return on a flag the rest sets: once per object (genesis's camera registration)
    ("class C:\n    def __init__(self):\n        self._registered = False\n"
     "    def f(self):\n        if self._registered:\n            return\n        register(self)\n"
     "        self._registered = True\n", [7, 8]),
    ("class C:\n    def f(self):\n        if self._done:\n            return\n        with lock:\n            work()\n"
     "            self._done = True\n", [5]),
    # work pending, which other objects mark again (`cam._dirty = True`): not done once
    ("class C:\n    def f(self):\n        if not self._pending:\n            return\n        work()\n"
     "        self._pending = False\n", []),
    # set back by code that may run every step: the rest may run every call
    ("class C:\n    def reset(self):\n        self._registered = False\n"
     "    def f(self):\n        if self._registered:\n            return\n        register(self)\n"
     "        self._registered = True\n", []),
    ("class C:\n    def step(self):\n        self._done = self.queue\n"
     "    def f(self):\n        if self._done:\n            return\n        work()\n"
     "        self._done = True\n", []),
    # a flag the rest does not set, or sets only under a condition
    ("class C:\n    def f(self):\n        if self._done:\n            return\n        work()\n", []),
    ("class C:\n    def f(self):\n        if self._done:\n            return\n        work()\n"
     "        if ok:\n            self._done = True\n", []),
    # a module's flag or cache the function declares global: once per process (unsloth-zoo's probes)
    ("_DONE = False\ndef f():\n    global _DONE\n    if _DONE:\n        return\n    try:\n        probe()\n"
     "    finally:\n        _DONE = True\n", [6]),
    ("_X = None\ndef f():\n    global _X\n    if _X is not None:\n        return _X\n    ok = probe()\n"
     "    _X = ok\n    return ok\n", [6, 7, 8]),
    ("_X = None\ndef f():\n    global _X\n    if _X is None:\n        _X = probe()\n    return _X\n", [4]),
    # a guard against re-entry set back when the work is done, a module's flag another function sets back
    ("_BUSY = False\ndef f():\n    global _BUSY\n    if _BUSY:\n        return\n    _BUSY = True\n    try:\n"
     "        work()\n    finally:\n        _BUSY = False\n", []),
    ("_DONE = False\ndef reset():\n    global _DONE\n    _DONE = False\n"
     "def f():\n    global _DONE\n    if _DONE:\n        return\n    work()\n    _DONE = True\n", []),
    # the flag set only past a way out, or in a `try` whose handler may go on without it: maybe never set
    ("class C:\n    def f(self, x):\n        if self._logged:\n            return\n        work()\n"
     "        if x.small:\n            return\n        self._logged = True\n", []),
    ("class C:\n    def f(self):\n        if self._done:\n            return\n        try:\n            work()\n"
     "            self._done = True\n        except ValueError:\n            pass\n", []),
    ("class C:\n    def f(self):\n        if self._done:\n            return\n"
     "        with contextlib.suppress(ValueError):\n            work()\n            self._done = True\n", []),
    # a module's name stored before it is tested holds what this call made
    ("_T = None\ndef f():\n    global _T\n    _T = None\n    if _T is not None:\n        return _T\n"
     "    _T = make()\n    return _T\n", []),
    # not declared global: a read of the module's name, which this function fills nothing of
    ("_X = None\ndef f():\n    if _X is not None:\n        return _X\n    return probe()\n", []),
    ("def f():\n    global _X\n    if _X is not None:\n        return _X\n    return probe()\n", []),
])
def test_work_done_once_behind_a_flag_or_a_module_cache(source, lines):
    tree = ast.parse(source)
    function = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)][-1]
    assert [statement.lineno for statement in statements_run_once_in_a_while(function, lambda: flag_uses(tree))] \
        == lines


@pytest.mark.parametrize(("body", "spans"), [
    # the arm taken only when a count is zero: an empty batch's fallback
    ("m = mask.sum()\nloss = total / m if m > 0 else torch.tensor(0.0, device=d)\n", [((3, 35), (3, 62))]),
    ("if mask.sum() == 0:\n    return torch.tensor(0.0).to(d)\nreturn total\n", [((3, 8), (3, 38))]),
    ("if len(boxes) > 0:\n    pass\nelse:\n    zero = d\n", [((5, 8), (5, 16))]),
    ("if not x.numel():\n    zero = d\n", [((3, 8), (3, 16))]),
    ("if x.shape[0] < 1 and d:\n    zero = d\n", [((3, 8), (3, 16))]),
    ("k = int(mask.sum().item())\nif k == 0:\n    zero = d\n", [((4, 8), (4, 16))]),
    # not a count: a rank, an index, a value, a parameter, a name bound to something else too
    ("if rank == 0:\n    zero = d\n", []),
    ("for i in range(3):\n    if i == 0:\n        zero = d\n", []),
    ("if x.mean() == 0:\n    zero = d\n", []),
    ("if n == 0:\n    zero = d\n", []),
    ("k = len(x)\nk = total\nif k == 0:\n    zero = d\n", []),
    # the arm taken when the count is not zero, or a test that says nothing of zero
    ("if len(x) > 0:\n    zero = d\n", []),
    ("if len(x) == 2:\n    zero = d\n", []),
    ("if len(x) == 0 or d:\n    zero = d\n", []),
    # in a loop or a comprehension a count is often each element's: an empty one is no degenerate input
    ("last = [t[-1:] if len(t) > 0 else torch.tensor([-1], device=d) for t in x]\n", []),
    ("for t in x:\n    if len(t) == 0:\n        zero = d\n", []),
    ("for t in x:\n    k = len(t)\n    zero = t.sum() / k if k > 0 else d\n", []),
    ("while True:\n    if len(x) == 0:\n        zero = d\n", []),
    # a lambda's parameter is its own; a name bound in a nested function, or bound otherwise too, is no count
    ("k = len(x)\nf = lambda k: d if k == 0 else 1\n", []),
    ("def inner():\n    k = len(x)\nif k == 0:\n    zero = d\n", []),
    ("k = len(x)\ntry:\n    pass\nexcept ValueError as k:\n    pass\nif k == 0:\n    zero = d\n", []),
    ("k = len(x)\nk += 1\nif k == 0:\n    zero = d\n", []),
    # a slice of a shape is no count
    ("if x.shape[1:]:\n    pass\nelse:\n    zero = d\n", []),
    # a bare name's truth is not followed to what the name holds (`if flag:` is the commonest test)
    ("k = len(x)\nif not k:\n    zero = d\n", []),
])
def test_the_arms_taken_only_when_a_count_is_zero(body, spans):
    code = "def forward(x, mask, total, n, d, rank):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    assert FileFacts(ast.parse(code), LineIndex(code)).empty_input_arms == spans


@pytest.mark.parametrize(("path", "other"), [
    ("torchrec/experimental/torch_tpu/modules/optimizers.py", True),
    ("vllm/v1/worker/tpu_model_runner.py", True),
    ("sglang/srt/hardware_backend/npu/attention.py", True),
    ("lmcache/v1/platform/devices/musa/cache_context.py", True),  # Moore Threads' MUSA
    ("aphrodite/metal/v1/sampling_batch.py", True),  # Apple's Metal and MLX
    ("tabpfn/architectures/shared/mlx_backend.py", True),
    ("sglang/srt/hardware_backend/mlx/tp_worker.py", True),
    ("tensorkrowch/models/mps.py", False),  # matrix product states, on any device
    ("pkg/metallic_paint.py", False),
    ("vllm/v1/worker/gpu_model_runner.py", False),
    ("pkg/output.py", False),  # "tpu" inside a word is no word of its own
    ("pkg/cuda_xpu_utils.py", False),  # names CUDA too: serves both
    ("benchmarks/tpu_vs_gpu/run.py", False),
    # Another framework's modules (dgl's backends), unless the path names torch too.
    ("dgl/nn/mxnet/conv/gatedgraphconv.py", True),
    ("dgl/backend/tensorflow/tensor.py", True),
    ("pkg/convert_tensorflow_checkpoint_to_pytorch.py", False),
    ("dgl/nn/pytorch/conv/gatedgraphconv.py", False),
])
def test_modules_for_another_accelerator_are_told_by_their_path(path, other):
    assert is_other_accelerator_path(path) is other


def test_a_chain_of_devices_read_from_tensors_is_classified_in_bounded_work(monkeypatch):
    # Each tensor is made on the devices of two others: followed without a bound, the work doubles per name.
    names = 14
    lines = [f"    v{i} = torch.zeros(1, device=v{i + 1}.device) + torch.zeros(1, device=v{i + 2}.device)\n"
             for i in range(names - 2)]
    code = ("import torch\ndef forward(xs, steps):\n    " + " = ".join(f"v{i}" for i in range(names)) + " = xs\n"
            "    for _ in range(steps):\n" + "".join("    " + line for line in lines) + "    return v0\n")
    facts = facts_for(code)
    calls = 0
    real = placement.classify_placement

    def counted(*args, **kwargs):
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(placement, "classify_placement", counted)
    read = [node for node in ast.walk(facts.tree) if isinstance(node, ast.Name) and node.id == "v0"][-1]
    assert real(facts, read, read.lineno) is Placement.UNKNOWN
    assert calls < 500


@pytest.mark.parametrize(("unpacking", "expected"), [
    ("q, TARGET, v = qkv.chunk(3)", Placement.GPU), ("_, TARGET = torch.topk(qkv, 2)", Placement.GPU),
    ("TARGET, _ = torch.linalg.slogdet(qkv)", Placement.GPU), ("TARGET, rest = qkv.max(dim=1)", Placement.GPU),
    ("TARGET, rest = torch.chunk(torch.cuda.get_rng_state(0), 2)", Placement.HOST),
    ("TARGET, rest = x.chunk(2)", Placement.UNKNOWN), ("TARGET, rest = helper(qkv)", Placement.UNKNOWN),
    ("TARGET, rest = qkv.shape", Placement.UNKNOWN),
])
def test_parts_of_a_tensor_op_live_where_the_tensor_does(unpacking, expected):
    code = (f"import torch\ndef forward(x, helper):\n    qkv = x.cuda()\n    {unpacking}\n    y = TARGET\n"
            "    return y\n")
    tree = ast.parse(code)
    use = next(node for node in ast.walk(tree) if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "")
               == "y")
    assert classify_placement(facts_for(code), use.value, use.lineno) is expected


@pytest.mark.parametrize("annotation, named", [
    ("Foo", "Foo"), ("mod.Foo", "mod.Foo"), ("'Foo'", "Foo"), ("Optional[Foo]", "Foo"),
    ("typing.Optional['mod.Foo']", "mod.Foo"), ("Foo | None", "Foo"), ("None | Foo", "Foo"),
    ("Union[Foo, None]", "Foo"), ("'Foo | None'", "Foo"),
    # not one class: several, a container's elements, no annotation at all
    ("Union[Foo, Bar]", None), ("Foo | Bar", None), ("list[Foo]", None), ("'not ( valid'", None), ("'None'", None),
])
def test_the_class_an_annotation_names(annotation, named):
    assert annotated_name(ast.parse(annotation, mode="eval").body) == named


@pytest.mark.parametrize(("imported", "reported"), [
    ("", True),
    ("import mlx.core as mx\n", True),  # a faster path on Macs beside the CUDA one: the file still runs on CUDA
    ("import torch_npu\n", False),  # written for Ascend NPUs: the mirrored tensor is the NPU's
])
def test_a_file_importing_apples_mlx_still_reads_its_mirrored_tensors_as_cuda_ones(imported, reported):
    code = (f"import torch\n{imported}"
            "class Runner(torch.nn.Module):\n    def forward(self, batch):\n        n = batch.seq_lens.max().item()\n"
            "        return batch.seq_lens_cpu[:n]\n")
    assert [finding.code for finding in lint(code, "HDL201")] == (["HDL201"] if reported else [])
