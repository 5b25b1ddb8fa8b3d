"""ember.jit: tracing a module or function, replaying the graph, saving and loading it."""

import copy
import json
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.jit import TracedModule, TracerWarning


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.0)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = self.drop(ember.flatten(x, 1))
        return F.log_softmax(self.fc(x), dim=1)


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 16, num_layers=2)
        self.decoder = nn.Linear(16, 20)
        self.decoder.weight = nn.Parameter(ember.randn(20, 16))

    def forward(self, tokens, state):
        out, (h, c) = self.lstm(self.embed(tokens), state)
        return {"logits": self.decoder(out).view(-1, 20), "state": (h, c)}


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_traced_module_replays_on_a_new_batch_size():
    ember.manual_seed(0)
    net = SmallCNN().eval()
    traced = ember.jit.trace(net, ember.randn(2, 1, 14, 14))
    assert isinstance(traced, TracedModule) and isinstance(traced, ember.jit.ScriptModule)
    x = ember.randn(5, 1, 14, 14)
    _close(traced(x), net(x))
    assert "Convolution(%x0, %conv.weight, %conv.bias" in traced.graph
    assert "flatten(" in traced.code and "LogSoftmax" in traced.graph
    assert list(traced.state_dict()) == list(net.state_dict())
    assert traced.fc.weight is net.fc.weight  # shared, as in PyTorch


def test_training_through_the_replay_matches_eager():
    ember.manual_seed(1)
    net = SmallCNN()
    traced = ember.jit.trace(net, ember.randn(3, 1, 14, 14), check_trace=False)
    twin = copy.deepcopy(net)  # (after tracing: that run updated the batch norm statistics)
    x, target = ember.randn(6, 1, 14, 14), ember.tensor([1, 2, 3, 4, 5, 6])
    for model in (traced, twin):
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            F.nll_loss(model(x), target).backward()
            opt.step()
    for p, q in zip(net.parameters(), twin.parameters()):
        _close(p, q)
    _close(net.bn.running_mean, twin.bn.running_mean)  # the replay updated the buffers
    _close(net.bn.running_var, twin.bn.running_var)


def test_language_model_with_dict_and_tuple_outputs():
    ember.manual_seed(2)
    lm = LanguageModel()
    tokens = ember.randint(0, 20, (7, 3))
    state = (ember.zeros(2, 3, 16), ember.zeros(2, 3, 16))
    traced = ember.jit.trace(lm, (tokens, state))
    tokens2 = ember.randint(0, 20, (7, 3))
    state2 = (ember.randn(2, 3, 16), ember.randn(2, 3, 16))
    got, expected = traced(tokens2, state2), lm(tokens2, state2)
    assert set(got) == {"logits", "state"} and isinstance(got["state"], tuple)
    _close(got["logits"], expected["logits"])
    _close(got["state"][1], expected["state"][1])


def test_traced_function_and_baked_control_flow():
    def f(x, y):
        if x.sum() > 0:
            return x * y + 1
        return x - y

    traced = ember.jit.trace(f, (ember.ones(3), ember.full((3,), 2.0)))
    assert traced(ember.full((4,), -1.0), ember.ones(4)).tolist() == [0.0] * 4  # (-1 * 1 + 1)
    with pytest.warns(TracerWarning, match="differs"):
        ember.jit.trace(f, (ember.ones(3), ember.ones(3)),
                        check_inputs=[(-ember.ones(3), ember.ones(3))])


def test_in_place_write_into_a_view_is_replayed():
    def f(x):
        y = x.clone()
        y[:, 0] = 0.0
        y[1:].mul_(2)
        return y

    traced = ember.jit.trace(f, ember.ones(3, 2))
    x = ember.arange(8.0).reshape(4, 2)
    _close(traced(x), f(x))


def test_only_the_first_dimension_may_change():
    traced = ember.jit.trace(SmallCNN().eval(), ember.randn(2, 1, 14, 14))
    with pytest.raises(RuntimeError, match=r"input 0 has shape \[2, 1, 16, 16\].*\[2, 1, 14"):
        traced(ember.randn(2, 1, 16, 16))
    with pytest.raises(RuntimeError, match="expected 1 input"):
        traced(ember.randn(2, 1, 14, 14), ember.randn(2))


def test_save_and_load_a_module(tmp_path):
    ember.manual_seed(3)
    lm = LanguageModel()
    lm.embed.weight.requires_grad_(False)
    lm.decoder.weight = nn.Parameter(ember.randn(20, 16))
    tokens = ember.randint(0, 20, (5, 2))
    state = (ember.zeros(2, 2, 16), ember.zeros(2, 2, 16))
    traced = ember.jit.trace(lm, (tokens, state))
    path = tmp_path / "lm.pt"
    ember.jit.save(traced, path)
    loaded = ember.jit.load(path)
    assert isinstance(loaded, ember.jit.ScriptModule)
    assert list(loaded.state_dict()) == list(lm.state_dict())
    assert not loaded.embed.weight.requires_grad and loaded.decoder.weight.requires_grad
    _close(loaded(tokens, state)["logits"], lm(tokens, state)["logits"])


def test_tied_weights_stay_tied(tmp_path):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    traced = ember.jit.trace(Tied(), ember.randn(2, 4))
    traced.save(tmp_path / "tied.pt")
    loaded = ember.jit.load(tmp_path / "tied.pt")
    assert loaded.a.weight is loaded.b.weight


def test_save_and_load_a_function_with_constants(tmp_path):
    table = ember.tensor([1.0, 10.0, 100.0])

    def f(x):
        return (x * table)[..., 1:].sum(-1, keepdim=True) ** 2

    traced = ember.jit.trace(f, ember.ones(2, 3))
    ember.jit.save(traced, tmp_path / "f.pt")
    loaded = ember.jit.load(tmp_path / "f.pt")
    x = ember.arange(6.0).reshape(2, 3)
    _close(loaded(x), f(x))


def test_a_file_can_only_name_ember_ops(tmp_path):
    traced = ember.jit.trace(lambda x: x.exp(), ember.ones(2))
    path = tmp_path / "f.pt"
    traced.save(path)
    payload = ember.load(path)
    doc = json.loads(payload["graph"])
    doc["nodes"][0]["op"] = "os.system"
    payload["graph"] = json.dumps(doc)
    ember.save(payload, path)
    with pytest.raises(RuntimeError, match="'os.system', which is not an op"):
        ember.jit.load(path)
    ember.save({"weights": ember.ones(2)}, path)
    with pytest.raises(RuntimeError, match="not written by ember.jit.save"):
        ember.jit.load(path)


def test_custom_function_is_replayed_but_not_saved(tmp_path):
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad + 100  # (not the true derivative: which one runs?)

    traced = ember.jit.trace(lambda x: Cube.apply(x) + 1, ember.ones(2))
    x = ember.tensor([2.0, -1.0], requires_grad=True)
    traced(x).sum().backward()
    assert x.grad.tolist() == [112.0, 103.0]
    assert "Cube.apply(%x0)" in traced.graph
    with pytest.raises(RuntimeError, match="custom autograd.Function .*Cube"):
        traced.save(tmp_path / "cube.pt")


def test_ops_run_without_the_tracers_profile_hook(monkeypatch):
    """The tracer's profile hook watches the traced code but is off while an op runs
    (numba compiling a kernel under it took ~4x longer), and is back after it."""
    import sys

    from ember.ops.elementwise import Exp

    runs = []
    forward = Exp.forward

    def spied_forward(ctx, x):
        runs[-1].append(sys.getprofile())
        return forward(ctx, x)

    monkeypatch.setattr(Exp, "forward", spied_forward)

    def fn(x):
        runs.append([sys.getprofile()])
        y = ember.exp(x)
        runs[-1].append(sys.getprofile())
        return y + 1

    traced = ember.jit.trace(fn, ember.ones(2))
    traced_runs = [run for run in runs if run[0] is not None]
    assert len(traced_runs) == 1
    before, in_op, after = traced_runs[0]
    assert in_op is None and after == before
    assert sys.getprofile() is None
    assert traced(ember.zeros(2)).tolist() == [2.0, 2.0]


def test_freeze():
    net = SmallCNN()
    traced = ember.jit.trace(net.eval(), ember.randn(2, 1, 14, 14))
    frozen = ember.jit.freeze(traced)
    assert list(frozen.parameters()) == [] and not frozen.training
    x = ember.randn(3, 1, 14, 14)
    _close(frozen(x), net(x))
    with ember.no_grad():
        net.fc.weight.mul_(2.0)
    _close(frozen(x) + 0, frozen(x))
    assert not np.allclose(frozen(x).numpy(), net(x).detach().numpy())  # constants
    with pytest.raises(RuntimeError, match="eval mode"):
        ember.jit.freeze(traced.train())


def test_scripting_api():
    with pytest.raises(NotImplementedError, match="ember.jit.script"):
        ember.jit.script(SmallCNN())
    assert not ember.jit.is_scripting() and not ember.jit.is_tracing()

    seen = []

    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1

    ember.jit.trace(f, ember.ones(1), check_trace=False)
    assert seen == [True]

    def g(x):
        return x

    assert ember.jit.ignore(g) is g and ember.jit.unused(g) is g and ember.jit.export(g) is g
    assert ember.jit.ignore(drop=True)(g) is g


def test_trace_module_and_errors():
    net = SmallCNN().eval()
    x = ember.randn(2, 1, 14, 14)
    traced = ember.jit.trace_module(net, {"forward": x})
    _close(traced(x), net(x))
    with pytest.raises(NotImplementedError, match="only 'forward'"):
        ember.jit.trace_module(net, {"forward": x, "other": x})
    with pytest.raises(ValueError, match="at least one tensor"):
        ember.jit.trace(lambda: ember.ones(1), ())
    with pytest.raises(TypeError, match="Module or a function"):
        ember.jit.trace(3, ember.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.jit.trace(net, x)  # a faithful trace does not warn


def test_dropout_and_samplers_draw_new_numbers_on_each_replay():
    def f(x):
        noise = ember.randn_like(x)
        return F.dropout(x, 0.5, training=True) + 0 * noise, noise

    traced = ember.jit.trace(f, ember.ones(4, 100), check_trace=False)
    (a, noise_a), (b, noise_b) = traced(ember.ones(6, 100)), traced(ember.ones(6, 100))
    assert a.shape == (6, 100) and not np.array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(noise_a.numpy(), noise_b.numpy())
    assert set(np.unique(a.numpy())) <= {0.0, 2.0}
    assert "dropout(%x0, 0.5, True" in traced.graph and "randn_like(%x0" in traced.graph


def test_replay_drops_each_intermediate_after_its_last_use():
    traced = ember.jit.trace(lambda x: ((x + 1) * 2).exp().sum(), ember.ones(3))
    # Add is last read by Mul (node 1), Mul by Exp (node 2), Exp by Sum; Sum is returned
    assert traced.graph_._release_after() == [[], [0], [1], [2]]
    assert traced(ember.zeros(3)).item() == pytest.approx(3 * np.exp(2.0))


def test_a_no_grad_block_is_replayed_without_gradients_and_saved_so(tmp_path):
    class Frozen(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.w = nn.Linear(3, 3), nn.Parameter(ember.ones(3))

        def forward(self, x):
            with ember.no_grad():
                h = self.fc(x)
            return (h * self.w).sum()

    model = Frozen()
    x = ember.randn(2, 3)
    traced = ember.jit.trace(model, (x,), check_trace=False)
    ember.jit.save(traced, tmp_path / "frozen.pt")
    traced(x).backward()
    assert model.fc.weight.grad is None  # (computed under no_grad: no gradient, as eagerly)
    np.testing.assert_allclose(model.w.grad.numpy(), model.fc(x).detach().numpy().sum(0),
                               rtol=1e-6)
    loaded = ember.jit.load(tmp_path / "frozen.pt")
    assert [n.grad for n in loaded.graph_.nodes] == [n.grad for n in traced.graph_.nodes]
    assert not all(n.grad for n in loaded.graph_.nodes)
