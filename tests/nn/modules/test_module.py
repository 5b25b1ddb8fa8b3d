"""Module: attribute routing, iteration order, state_dict, conversion, hooks, copying, repr."""

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.modules.module import _IncompatibleKeys


def make_net(lib):
    """The same nested model in ember or torch (`lib`), without random init."""
    tnn = lib.nn

    class Cell(tnn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = tnn.Parameter(lib.ones(n))
            self.bias = tnn.Parameter(lib.zeros(n))

        def forward(self, x):
            return x * self.weight + self.bias

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.cell = Cell(3)
            self.register_buffer("running", lib.zeros(3))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)
            self.scale = tnn.Parameter(lib.ones(1))
            self.skip = None
            self.register_parameter("absent", None)

        def forward(self, x):
            return self.cell(x) * self.scale

    class Net(tnn.Module):
        def __init__(self):
            super().__init__()
            self.embed = tnn.Parameter(lib.zeros(2, 3))
            self.blocks = tnn.ModuleList([Block(), Block()])
            self.head = tnn.Sequential(OrderedDict(proj=Cell(3), act=tnn.Identity()))
            self.shared = self.head.proj
            self.counter = tnn.Buffer(lib.zeros((), dtype=lib.int64))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    return Net()


PARAM_NAMES = [
    "embed", "blocks.0.scale", "blocks.0.cell.weight", "blocks.0.cell.bias", "blocks.1.scale",
    "blocks.1.cell.weight", "blocks.1.cell.bias", "head.proj.weight", "head.proj.bias",
]
BUFFER_NAMES = ["counter", "blocks.0.running", "blocks.0.scratch", "blocks.1.running",
                "blocks.1.scratch"]
STATE_KEYS = [
    "embed", "counter", "blocks.0.scale", "blocks.0.running", "blocks.0.cell.weight",
    "blocks.0.cell.bias", "blocks.1.scale", "blocks.1.running", "blocks.1.cell.weight",
    "blocks.1.cell.bias", "head.proj.weight", "head.proj.bias", "shared.weight", "shared.bias",
]
MODULE_NAMES = ["", "blocks", "blocks.0", "blocks.0.cell", "blocks.1", "blocks.1.cell", "head",
                "head.proj", "head.act"]
NET_REPR = """Net(
  (blocks): ModuleList(
    (0-1): 2 x Block(
      (cell): Cell()
    )
  )
  (head): Sequential(
    (proj): Cell()
    (act): Identity()
  )
  (shared): Cell()
)"""


# ----------------------------------------------------------------------------
# registration and attribute routing


def test_setattr_routes_parameters_modules_buffers():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(2))
    m.child = nn.Identity()
    m.register_buffer("b", ember.zeros(2))
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._modules) == ["child"]
    assert list(m._buffers) == ["b"] and "plain" in m.__dict__
    assert "w" not in m.__dict__ and "child" not in m.__dict__
    assert m.w is m._parameters["w"] and m.child is m._modules["child"]
    # assigning a plain tensor to a buffer name keeps it a buffer
    new = ember.ones(2)
    m.b = new
    assert m._buffers["b"] is new
    # a plain attribute becomes a parameter when a Parameter is assigned
    m.plain = nn.Parameter(ember.ones(1))
    assert "plain" in m._parameters and "plain" not in m.__dict__
    # None is allowed for registered names
    m.w = None
    assert m._parameters["w"] is None and m.w is None
    m.child = None
    assert m.child is None


def test_buffer_marker_and_persistence():
    m = nn.Module()
    m.a = nn.Buffer(ember.ones(2))
    m.b = nn.Buffer(ember.ones(2), persistent=False)
    assert isinstance(m.a, nn.Buffer) and not isinstance(ember.ones(1), nn.Buffer)
    assert list(m._buffers) == ["a", "b"] and m._non_persistent_buffers_set == {"b"}
    assert list(m.state_dict()) == ["a"]
    m.b = ember.zeros(2)  # re-assigning keeps it non-persistent
    assert list(m.state_dict()) == ["a"]
    m.register_buffer("b", ember.zeros(2), persistent=True)
    assert list(m.state_dict()) == ["a", "b"]


def test_delattr_unregisters():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(2))
    m.register_buffer("b", ember.zeros(1), persistent=False)
    m.c = nn.Identity()
    del m.w, m.b, m.c
    assert not m._parameters and not m._buffers and not m._modules
    assert not m._non_persistent_buffers_set
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'w'"):
        m.w


@pytest.mark.parametrize("action, exc, message", [
    (lambda m: m.register_parameter("a.b", None), KeyError, "parameter name can.*t contain"),
    (lambda m: m.register_parameter("", None), KeyError, "can.*t be empty string"),
    (lambda m: m.register_parameter(1, None), TypeError,
     "parameter name should be a string. Got int"),
    (lambda m: m.register_parameter("q", ember.ones(1)), TypeError,
     r"cannot assign 'torch.FloatTensor' object to parameter 'q' \(torch.nn.Parameter or None"),
    (lambda m: m.register_buffer("a.b", None), KeyError, "buffer name can.*t contain"),
    (lambda m: m.register_buffer("r", 3), TypeError,
     r"cannot assign 'int' object to buffer 'r' \(torch Tensor or None required\)"),
    (lambda m: m.add_module("a.b", None), KeyError, "module name can.*t contain"),
    (lambda m: m.add_module("r", 3), TypeError, "int is not a Module subclass"),
    (lambda m: m.add_module(3, None), TypeError, "module name should be a string. Got int"),
    (lambda m: m.register_buffer("train", None), KeyError, "attribute 'train' already exists"),
    (lambda m: m.add_module("eval", None), KeyError, "attribute 'eval' already exists"),
])
def test_registration_errors(action, exc, message):
    with pytest.raises(exc, match=message):
        action(nn.Module())


def test_assignment_type_errors():
    m = nn.Module()
    m.p = nn.Parameter(ember.ones(1))
    m.c = nn.Identity()
    m.register_buffer("b", ember.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'p' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.p = ember.ones(1)
    with pytest.raises(TypeError, match="as child module 'c'"):
        m.c = ember.ones(1)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'b' \(torch.nn.Buffer"):
        m.b = 3


def test_non_leaf_parameter_rejected():
    m = nn.Module()
    p = nn.Parameter(ember.ones(1))
    with pytest.raises(TypeError):
        m.register_parameter("q", p * 2)  # a plain tensor


def test_assign_before_init():
    class Early(nn.Module):
        def __init__(self, what):
            if what == "param":
                self.x = nn.Parameter(ember.ones(1))
            elif what == "module":
                self.x = nn.Identity()
            else:
                self.register_buffer("x", None)

    for what, text in [("param", "parameters"), ("module", "module"), ("buffer", "buffer")]:
        with pytest.raises(AttributeError, match=f"cannot assign {text} before Module"):
            Early(what)


def test_init_rejects_arguments_and_forward_missing():
    with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
        nn.Module(3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'a'"):
        nn.Module(a=3)
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required '
                                                  '"forward" function'):
        nn.Module()(1)


def test_dir_lists_registered_names():
    net = make_net(ember)
    names = dir(net)
    for key in ("embed", "blocks", "counter", "forward", "training"):
        assert key in names
    assert "0" not in dir(net.blocks)


# ----------------------------------------------------------------------------
# iteration order and names


def test_named_members_order():
    net = make_net(ember)
    assert [n for n, _ in net.named_parameters()] == PARAM_NAMES
    assert [n for n, _ in net.named_buffers()] == BUFFER_NAMES
    assert [n for n, _ in net.named_modules()] == MODULE_NAMES
    assert [n for n, _ in net.named_children()] == ["blocks", "head", "shared"]
    assert len(list(net.parameters())) == len(PARAM_NAMES)
    assert list(net.modules())[0] is net
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["embed"]
    assert [n for n, _ in net.named_parameters(prefix="model")][:2] == [
        "model.embed", "model.blocks.0.scale"]
    names = [n for n, _ in net.named_parameters(remove_duplicate=False)]
    assert names == PARAM_NAMES + ["shared.weight", "shared.bias"]
    names = [n for n, _ in net.named_modules(remove_duplicate=False)]
    assert names == MODULE_NAMES + ["shared"]


def test_shared_parameter_counted_once():
    a = nn.Identity()
    a.w = nn.Parameter(ember.ones(2))
    b = nn.Module()
    b.x = a
    b.y = nn.Module()
    b.y.w = a.w
    assert [n for n, _ in b.named_parameters()] == ["x.w"]
    assert len(list(b.parameters())) == 1


def test_names_match_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = make_net(ember), make_net(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for flag in (False, True):
        assert ([n for n, _ in ours.named_parameters(remove_duplicate=flag)]
                == [n for n, _ in theirs.named_parameters(remove_duplicate=flag)])


def test_get_submodule_parameter_buffer():
    net = make_net(ember)
    assert net.get_submodule("blocks.1.cell") is net.blocks[1].cell
    assert net.get_submodule("") is net
    assert net.get_parameter("blocks.0.cell.weight") is net.blocks[0].cell.weight
    assert net.get_buffer("blocks.0.running") is net.blocks[0].running
    with pytest.raises(AttributeError, match="ModuleList has no attribute `5`"):
        net.get_submodule("blocks.5")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("head.proj.weight")
    with pytest.raises(AttributeError, match="`training` is not an nn.Parameter"):
        net.get_parameter("head.training")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("head.proj.weight")
    new = nn.Identity()
    net.set_submodule("head.act", new)
    assert net.head.act is new


# ----------------------------------------------------------------------------
# state_dict and load_state_dict


def test_state_dict_keys_values_and_detach():
    net = make_net(ember)
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict) and list(sd) == STATE_KEYS
    assert sd["embed"].requires_grad is False and type(sd["embed"]) is ember.Tensor
    assert np.shares_memory(sd["embed"].numpy(), net.embed.detach().numpy())
    assert sd["counter"].dtype is ember.int64
    kept = net.state_dict(keep_vars=True)
    assert kept["embed"] is net.embed
    assert list(net.blocks[0].state_dict(prefix="x.")) == [
        "x.scale", "x.running", "x.cell.weight", "x.cell.bias"]
    assert sd._metadata[""] == {"version": 1} and "blocks.0.cell" in sd._metadata


def test_load_state_dict_copies_and_converts_dtype():
    src, dst = make_net(ember), make_net(ember)
    with ember.no_grad():
        src.embed.add_(2.0)
        src.blocks[1].running.add_(5.0)
    sd = src.state_dict()
    sd["head.proj.weight"] = ember.tensor([7.0, 8.0, 9.0], dtype=ember.float64)
    sd["shared.weight"] = sd["head.proj.weight"]
    embed = dst.embed
    result = dst.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert dst.embed is embed  # copied into the existing parameter
    assert dst.embed.tolist() == [[2.0] * 3] * 2
    assert dst.blocks[1].running.tolist() == [5.0] * 3
    assert dst.head.proj.weight.dtype is ember.float32
    assert dst.head.proj.weight.tolist() == [7.0, 8.0, 9.0]


def test_load_state_dict_strict_reports():
    net = make_net(ember)
    sd = net.state_dict()
    del sd["blocks.0.scale"], sd["counter"]
    sd["blocks.0.extra"] = ember.zeros(1)
    sd["nothere.weight"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "counter", '
        '"blocks.0.scale". \n\tUnexpected key(s) in state_dict: "nothere.weight", '
        '"blocks.0.extra". ')
    result = net.load_state_dict(sd, strict=False)
    assert isinstance(result, _IncompatibleKeys)
    assert result.missing_keys == ["counter", "blocks.0.scale"]
    assert result.unexpected_keys == ["nothere.weight", "blocks.0.extra"]
    assert "IncompatibleKeys(missing_keys=" in repr(result)


def test_load_state_dict_strict_report_matches_torch():
    torch = pytest.importorskip("torch")
    reports = []
    for lib in (ember, torch):
        net = make_net(lib)
        sd = net.state_dict()
        del sd["blocks.0.scale"], sd["counter"]
        sd["blocks.0.extra"] = lib.zeros(1)
        sd["nothere.weight"] = lib.zeros(1)
        res = net.load_state_dict(sd, strict=False)
        with pytest.raises(RuntimeError) as info:
            net.load_state_dict(sd)
        reports.append((res.missing_keys, res.unexpected_keys, str(info.value)))
    assert reports[0] == reports[1]


def test_shape_mismatch_message():
    ours = nn.Module()
    ours.weight = nn.Parameter(ember.zeros(3, 4))
    ours.bias = nn.Parameter(ember.zeros(3))
    bad = {"weight": ember.zeros(3, 5), "bias": ember.zeros(3)}
    expected = ("Error(s) in loading state_dict for Module:\n\tsize mismatch for weight: "
                "copying a param with shape torch.Size([3, 5]) from checkpoint, the shape in "
                "current model is torch.Size([3, 4]).")
    with pytest.raises(RuntimeError) as info:
        ours.load_state_dict(bad)
    assert str(info.value) == expected
    with pytest.raises(RuntimeError, match="size mismatch"):
        ours.load_state_dict(bad, strict=False)  # shape errors raise even when not strict
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        ours.load_state_dict([1, 2])


def test_load_state_dict_assign():
    m = nn.Module()
    m.weight = nn.Parameter(ember.zeros(2))
    m.register_buffer("buf", ember.zeros(2))
    w, b = ember.ones(2, dtype=ember.float64), ember.ones(2)
    m.load_state_dict({"weight": w, "buf": b}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.dtype is ember.float64  # assign keeps the given tensor's dtype
    assert np.shares_memory(m.weight.detach().numpy(), w.numpy())
    assert m.buf is b


def test_state_dict_hooks_and_extra_state():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.zeros(1))
            self.note = "a"

        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"]

    m = WithExtra()
    sd = m.state_dict()
    assert list(sd) == ["w", "_extra_state"] and sd["_extra_state"] == {"note": "a"}
    other = WithExtra()
    other.load_state_dict({"w": ember.ones(1), "_extra_state": {"note": "b"}})
    assert other.note == "b"
    seen = []
    other.register_load_state_dict_post_hook(lambda mod, keys: seen.append(list(keys[0])))
    other.register_state_dict_pre_hook(lambda mod, prefix, keep: seen.append(prefix))
    other.load_state_dict({"w": ember.ones(1)}, strict=False)
    other.state_dict()
    assert seen == [["_extra_state"], ""]


def test_subclass_load_from_state_dict_override():
    class Versioned(nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.register_buffer("count", ember.zeros((), dtype=ember.int64))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            if local_metadata.get("version", 1) < 2:
                state_dict.setdefault(prefix + "count", ember.tensor(7))
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)

    outer = nn.Sequential(Versioned())
    outer.load_state_dict({})  # no metadata: treated as version 1, the key is filled in
    assert outer[0].count.item() == 7
    sd = outer.state_dict()
    assert sd._metadata["0"]["version"] == 2


# ----------------------------------------------------------------------------
# modes, gradients, conversion


def test_train_eval_propagate():
    net = make_net(ember)
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.blocks.train()
    assert net.blocks[1].cell.training and not net.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)


def test_requires_grad_and_zero_grad():
    net = make_net(ember)
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    x = ember.ones(3)
    net(x).sum().backward()
    assert net.blocks[0].cell.weight.grad is not None
    net.zero_grad(set_to_none=False)
    grad = net.blocks[0].cell.weight.grad
    assert grad.tolist() == [0.0, 0.0, 0.0]
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_double_keeps_parameter_identity_and_converts_grads():
    net = make_net(ember)
    params = list(net.parameters())
    net(ember.ones(3)).sum().backward()
    assert net.double() is net
    assert [p is q for p, q in zip(params, net.parameters())] == [True] * len(params)
    assert all(p.dtype is ember.float64 for p in net.parameters())
    assert net.blocks[0].cell.weight.grad.dtype is ember.float64
    assert net.blocks[0].running.dtype is ember.float64
    assert net.counter.dtype is ember.int64  # integer buffers keep their dtype
    net.to(ember.float32)
    assert net.embed.dtype is ember.float32 and net.counter.dtype is ember.int64
    net.to(ember.ones(1, dtype=ember.float64))
    assert net.embed.dtype is ember.float64
    net.to("cpu", ember.float32)
    net.float()
    assert net.embed.dtype is ember.float32
    net.half()
    assert net.embed.dtype is ember.float16
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex "
                                        "dtypes, but got desired dtype="):
        net.to(ember.int64)


def test_type_casts_everything():
    m = nn.Module()
    m.register_buffer("count", ember.zeros(2, dtype=ember.int64))
    m.type(ember.float64)
    assert m.count.dtype is ember.float64


def test_apply_visits_children_first():
    net = make_net(ember)
    order = []
    assert net.apply(lambda m: order.append(type(m).__name__)) is net
    # the shared Cell is reached twice (as head.proj and as shared), like PyTorch
    assert order == ["Cell", "Block", "Cell", "Block", "ModuleList", "Cell", "Identity",
                     "Sequential", "Cell", "Net"]


# ----------------------------------------------------------------------------
# forward hooks


class Scale(nn.Module):
    def __init__(self, factor=2.0):
        super().__init__()
        self.w = nn.Parameter(ember.tensor([factor]))

    def forward(self, x, shift=0.0):
        return x * self.w + shift


def test_forward_pre_hook_and_hook_modify_and_order():
    m = Scale()
    calls = []

    def pre_a(mod, args):
        calls.append("pre_a")
        return (args[0] + 1,)

    def pre_b(mod, args):
        calls.append("pre_b")
        return args[0] * 10  # a single value is wrapped into a tuple

    def post(mod, args, out):
        calls.append("post")
        calls.append(args[0].tolist())  # the args forward received
        return out + 100

    m.register_forward_pre_hook(pre_a)
    h = m.register_forward_pre_hook(pre_b, prepend=True)
    m.register_forward_hook(post)
    out = m(ember.tensor([1.0]))
    assert calls == ["pre_b", "pre_a", "post", [11.0]]
    assert out.tolist() == [122.0]  # ((1 * 10) + 1) * 2 + 100
    h.remove()
    calls.clear()
    assert m(ember.tensor([1.0])).tolist() == [104.0]
    assert calls == ["pre_a", "post", [2.0]]


def test_hooks_with_kwargs():
    m = Scale()

    def pre(mod, args, kwargs):
        return args, {"shift": kwargs.get("shift", 0.0) + 1.0}

    def post(mod, args, kwargs, out):
        assert kwargs == {"shift": 4.0}
        return out * -1

    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(post, with_kwargs=True)
    assert m(ember.tensor([1.0]), shift=3.0).tolist() == [-6.0]
    m.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(ember.tensor([1.0]))


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append("normal"))
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == [None]


def test_global_forward_hooks():
    from ember.nn.modules import module as module_mod

    seen = []
    h1 = module_mod.register_module_forward_pre_hook(lambda m, a: seen.append("gpre"))
    h2 = module_mod.register_module_forward_hook(lambda m, a, o: seen.append("gpost"))
    try:
        m = Scale()
        m.register_forward_pre_hook(lambda mod, a: seen.append("pre"))
        m(ember.ones(1))
    finally:
        h1.remove()
        h2.remove()
    assert seen == ["gpre", "pre", "gpost"]
    seen.clear()
    Scale()(ember.ones(1))
    assert seen == []


# ----------------------------------------------------------------------------
# full backward hooks


def test_full_backward_hook_receives_grads():
    m = Scale(3.0)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["in"] = [None if g is None else g.tolist() for g in grad_input]
        seen["out"] = [g.tolist() for g in grad_output]

    m.register_full_backward_hook(hook)
    y = m(x)
    (y * ember.tensor([1.0, 10.0])).sum().backward()
    assert seen["out"] == [[1.0, 10.0]]
    assert seen["in"] == [[3.0, 30.0]]
    assert x.grad.tolist() == [3.0, 30.0]
    assert m.w.grad.tolist() == [21.0]  # 1*1 + 10*2


def test_full_backward_hook_can_replace_grad_input():
    m = Scale(3.0)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.5,))
    m(x).sum().backward()
    assert x.grad.tolist() == [1.5, 1.5]
    assert m.w.grad.tolist() == [3.0]  # parameter gradients are not affected


def test_full_backward_pre_hook_replaces_grad_output():
    m = Scale(3.0)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].tolist()))
    m(x).sum().backward()
    assert seen == [[2.0, 2.0]]
    assert x.grad.tolist() == [6.0, 6.0]
    assert m.w.grad.tolist() == [6.0]  # 2*1 + 2*2


def test_full_backward_hook_input_without_grad_and_non_tensor_args():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.tensor([2.0]))

        def forward(self, a, scale, b):
            return a * self.w * scale + b

    m = Two()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(
        [None if g is None else g.tolist() for g in gi]))
    a = ember.tensor([1.0], requires_grad=True)
    b = ember.tensor([5.0])
    m(a, 3.0, b).sum().backward()
    assert seen == [[[6.0], None, None]]
    seen.clear()
    with pytest.warns(UserWarning, match="Full backward hook is firing"):
        m(ember.tensor([1.0]), 3.0, b).sum().backward()  # no input requires grad
    assert seen == [[None, None, None]]
    assert m.w.grad.tolist() == [6.0]


def test_full_backward_hook_multiple_outputs_and_removal():
    class Split(nn.Module):
        def forward(self, x):
            return x * 2, x * 3

    m = Split()
    seen = []
    h = m.register_full_backward_hook(lambda mod, gi, go: seen.append(
        ([g.tolist() for g in gi], [None if g is None else g.tolist() for g in go])))
    x = ember.tensor([1.0], requires_grad=True)
    a, b = m(x)
    (a + 10 * b).sum().backward()
    assert seen == [([[32.0]], [[1.0], [10.0]])]
    h.remove()
    seen.clear()
    m(x)[0].sum().backward()
    assert seen == []


def test_backward_hook_on_nested_modules_order():
    inner = Scale(2.0)
    outer = nn.Sequential(inner, Scale(3.0))
    order = []
    inner.register_full_backward_hook(lambda m, gi, go: order.append("inner"))
    outer.register_full_backward_hook(lambda m, gi, go: order.append("outer"))
    outer[1].register_full_backward_pre_hook(lambda m, go: order.append("pre1"))
    x = ember.ones(1, requires_grad=True)
    outer(x).sum().backward()
    assert order == ["pre1", "inner", "outer"]
    assert x.grad.tolist() == [6.0]


# ----------------------------------------------------------------------------
# copying, pickling, printing


def test_deepcopy_independent_parameters():
    net = make_net(ember)
    with ember.no_grad():
        net.embed.add_(1.5)
    clone = copy.deepcopy(net)
    assert clone.embed is not net.embed and type(clone.embed) is nn.Parameter
    assert clone.embed.tolist() == net.embed.tolist()
    assert clone.shared is clone.head.proj  # sharing is preserved
    with ember.no_grad():
        clone.embed.add_(1.0)
    assert net.embed.tolist()[0][0] == 1.5
    assert [n for n, _ in clone.named_parameters()] == PARAM_NAMES
    # hooks survive the copy and are independent
    clone.register_forward_hook(lambda m, a, o: o)
    assert len(net._forward_hooks) == 0


def test_pickle_roundtrip():
    net = nn.Sequential(Scale(3.0), nn.ModuleList([Scale()]))
    net.register_buffer("running", ember.zeros(2))
    with ember.no_grad():
        net.running.add_(4.0)
    back = pickle.loads(pickle.dumps(net))
    assert list(back.state_dict()) == ["running", "0.w", "1.0.w"]
    assert back.running.tolist() == [4.0] * 2 and back[0].w.tolist() == [3.0]
    assert isinstance(back[0].w, nn.Parameter) and back[0].w.requires_grad
    assert back[0](ember.ones(1)).tolist() == [3.0]


def test_repr_tree():
    assert repr(make_net(ember)) == NET_REPR


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    assert repr(make_net(ember)) == repr(make_net(torch))


def test_extra_repr_multiline():
    class Multi(nn.Module):
        def extra_repr(self):
            return "a=1,\nb=2"

    m = nn.Module()
    m.one = Multi()
    assert repr(Multi()) == "Multi(\n  a=1,\n  b=2\n)"
    assert repr(m) == "Module(\n  (one): Multi(\n    a=1,\n    b=2\n  )\n)"


def test_state_dict_positional_args_warn():
    m = Scale()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sd = m.state_dict(None, "p.")
    assert list(sd) == ["p.w"] and caught


def test_legacy_hook_registration():
    m = Scale(3.0)
    seen = []
    with pytest.warns(FutureWarning, match="register_backward_hook is deprecated"):
        m.register_backward_hook(lambda mod, gi, go: seen.append(gi[0].tolist()))
    x = ember.ones(1, requires_grad=True)
    m(x).sum().backward()
    assert seen == [[3.0]]
    m._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: seen.append(prefix))
    m._register_load_state_dict_pre_hook(lambda mod, sd, *rest: seen.append(mod), with_module=True)
    m.load_state_dict({"w": ember.ones(1)})
    assert seen[1:] == ["", m]
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"replaced": 1})
    assert m.state_dict() == {"replaced": 1}


def test_to_empty():
    m = Scale(3.0)
    w = m.w
    assert m.to_empty(device="cpu") is m
    assert m.w is w and m.w.shape == (1,)


def test_hooked_call_leaves_no_reference_cycles():
    import gc
    import weakref

    m = Scale(2.0)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    m.register_forward_hook(lambda mod, args, out: out * 1)
    gc.disable()
    try:
        x = ember.ones(2, requires_grad=True)
        y = m(x)
        node = weakref.ref(y.grad_fn)
        y.sum().backward()
        del y
        assert node() is None
    finally:
        gc.enable()
