"""ember.compile's pattern rewrites (ember/_compile/patterns.py): attention's
``softmax(masked_fill(x * scale, mask, value))`` as one fused op, which gives the bits
of the three ops it replaces, forward and backward, and is found only where moving the
ops is safe."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._compile.patterns import ScaledMaskedSoftmax
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.ops import _native_rows


def _unfused(x, mask, scale, value):
    scores = x * scale if scale != 1.0 else x
    return F.softmax(scores.masked_fill(mask, value), dim=-1)


def _fused(x, mask, scale, value):
    full = np.broadcast_to(mask.numpy(), tuple(x.shape))
    return ScaledMaskedSoftmax.apply(x, scale, value, mask=full, dim=x.dim() - 1)


def _causal(t):
    return ember.tensor(np.triu(np.ones((t, t), bool), 1))


@pytest.fixture(params=["native", "numpy"])
def paths(request, monkeypatch):
    """Both the numba row kernels and the NumPy fallback."""
    if request.param == "native" and not native.available():
        pytest.skip("numba is not installed")
    if request.param == "numpy":
        monkeypatch.setattr(_native_rows, "supports", lambda *a, **k: False)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, mask_shape, scale, value", [
    ((3, 2, 8, 8), (1, 1, 8, 8), 0.35, float("-inf")),
    ((32, 4, 64, 64), (64, 64), 0.17677669529663687, float("-inf")),   # cut over threads
    ((5, 7, 9), (5, 7, 9), 1.0, -1e4),                                  # a finite value
])
def test_fused_equals_the_three_ops_bit_for_bit(paths, dtype, shape, mask_shape, scale, value):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape).astype(dtype)
    g = ember.tensor(rng.standard_normal(shape).astype(dtype))
    if mask_shape == shape:
        mask = ember.tensor(rng.random(mask_shape) < 0.3)
    else:
        mask = _causal(shape[-1]).reshape(mask_shape)
    a, b = ember.tensor(x0, requires_grad=True), ember.tensor(x0, requires_grad=True)
    expected, got = _unfused(a, mask, scale, value), _fused(b, mask, scale, value)
    expected.backward(g)
    got.backward(g)
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())
    assert got.dtype == expected.dtype and got.grad_fn.name() == "CompiledMaskedSoftmaxBackward0"
    # and against float64 NumPy
    z = np.where(np.broadcast_to(mask.numpy(), shape), value, x0.astype(np.float64) * scale)
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(got.detach().numpy(), e / e.sum(-1, keepdims=True),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-7)


def test_gradients_of_first_and_second_order(paths):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((2, 3, 5)), requires_grad=True)
    mask = ember.tensor(rng.random((3, 5)) < 0.3)
    for value in (float("-inf"), -3.0):
        assert gradcheck(lambda t, v=value: _fused(t, mask, 0.7, v), (x,))
        assert gradgradcheck(lambda t, v=value: _fused(t, mask, 0.7, v), (x,))


class Attention(nn.Module):
    def __init__(self, variant="plain"):
        super().__init__()
        self.variant = variant
        self.register_buffer("mask", ember.tril(ember.ones(6, 6)).view(1, 1, 6, 6))

    def forward(self, q, k):
        att = (q @ k.transpose(-2, -1)) * 0.5
        extra = None
        if self.variant == "scores_reused":    # the scaled scores read twice: the product
            extra = att.sum()                  # by the scale stays an op of its own
        if self.variant == "inplace_between":  # an in-place op between: no rewrite
            extra = q.sum() * 0.0
            extra.add_(1.0)
        att = att.masked_fill(self.mask == 0, float("-inf"))
        att = F.log_softmax(att, dim=-1) if self.variant == "log" else F.softmax(att, dim=-1)
        return att if extra is None else att * extra


@pytest.mark.parametrize("variant, fused, product_left", [
    ("plain", True, False), ("scores_reused", True, True), ("inplace_between", False, True),
    ("log", False, True)])
def test_compile_rewrites_attention_scores_only_where_safe(variant, fused, product_left):
    rng = np.random.default_rng(2)
    model = Attention(variant)
    compiled = ember.compile(Attention(variant))
    q0, k0 = (rng.standard_normal((2, 3, 6, 4)).astype(np.float32) for _ in range(2))
    g = ember.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    for _ in range(2):   # capture, then replay
        results = []
        for m in (model, compiled):
            q, k = ember.tensor(q0, requires_grad=True), ember.tensor(k0, requires_grad=True)
            out = m(q, k)
            out.backward(g)
            results.append((out.detach().numpy(), k.grad.numpy()))
        np.testing.assert_array_equal(results[1][0], results[0][0])
        np.testing.assert_array_equal(results[1][1], results[0][1])
    source = list(compiled._compiled.graphs.values())[0].describe()
    assert ("ScaledMaskedSoftmax" in source) == fused
    assert ("# Mul " in source) == product_left


# ---------------------------------------------------------------------------
# a linear layer and the relu after it as one op (ops/fused_linear.py)

from ember.ops import _native_activation  # noqa: E402
from ember.ops import fused_linear  # noqa: E402
from ember.ops.fused_linear import FusedLinear  # noqa: E402


@pytest.fixture(params=["one pass", "threaded", "numpy"])
def linear_paths(request, monkeypatch):
    """The relu gradient and bias sums in one pass, through relu's threaded kernel and a
    sum, and on NumPy."""
    if request.param != "numpy" and not native.available():
        pytest.skip("numba is not installed")
    if request.param == "threaded":
        monkeypatch.setattr(fused_linear, "ONE_PASS_MAX", 0)
    if request.param == "numpy":
        monkeypatch.setattr(_native_activation, "supports", lambda *a, **k: False)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("input_grad", [True, False])
def test_fused_linear_equals_the_separate_ops(linear_paths, dtype, relu, input_grad):
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((70, 33)).astype(dtype)
    w0 = rng.standard_normal((21, 33)).astype(dtype)
    b0 = rng.standard_normal(21).astype(dtype)
    g = rng.standard_normal((70, 21)).astype(dtype)
    got, expected = [], []
    for fused, results in ((True, got), (False, expected)):
        x = ember.tensor(x0, requires_grad=input_grad)
        w, b = ember.tensor(w0, requires_grad=True), ember.tensor(b0, requires_grad=True)
        if fused:
            y = FusedLinear.apply(x, w, b, relu=relu)
        else:
            y = F.linear(x, w, b)
            y = F.relu(y) if relu else y
        y.backward(ember.tensor(g))
        results += [y.detach().numpy(), w.grad.numpy(), b.grad.numpy()]
        results += [x.grad.numpy()] if input_grad else [x.grad]
    tight = {"rtol": 1e-6 if dtype == np.float32 else 1e-14, "atol": 1e-6}
    for a, e in zip(got, expected):
        if e is None:
            assert a is None
        else:
            assert a.dtype == dtype
            np.testing.assert_allclose(a, e, **tight)
    # and against float64 NumPy
    pre = x0.astype(np.float64) @ w0.T.astype(np.float64) + b0
    d = g * (pre > 0) if relu else g
    loose = {"rtol": 1e-4 if dtype == np.float32 else 1e-12, "atol": 1e-4}
    np.testing.assert_allclose(got[0], np.maximum(pre, 0) if relu else pre, **loose)
    np.testing.assert_allclose(got[1], d.T @ x0, **loose)
    np.testing.assert_allclose(got[2], d.sum(0), **loose)
    if input_grad:
        np.testing.assert_allclose(got[3], d @ w0, **loose)


def test_fused_linear_passes_the_gradient_of_nan_outputs(linear_paths):
    # as relu does: a NaN output is kept, and so is its gradient
    x = ember.tensor([[1.0, 2.0], [-2.0, 1.0]], requires_grad=True)
    w = ember.tensor([[1.0, 0.0], [-1.0, 0.0]], requires_grad=True)
    b = ember.tensor([float("nan"), 0.0], requires_grad=True)
    y = FusedLinear.apply(x, w, b, relu=True)   # before relu: [[nan, -1], [nan, 2]]
    y.backward(ember.ones(2, 2))
    np.testing.assert_array_equal(y.detach().numpy(), [[np.nan, 0.0], [np.nan, 2.0]])
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(w.grad.numpy(), [[-1.0, 3.0], [-2.0, 1.0]])


@pytest.mark.parametrize("relu", [True, False])
def test_fused_linear_gradients_of_first_and_second_order(linear_paths, relu):
    rng = np.random.default_rng(5)
    x, w, b = (ember.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((4, 3), (5, 3), (5,)))
    assert gradcheck(lambda *t: FusedLinear.apply(*t, relu=relu), (x, w, b))
    assert gradgradcheck(lambda *t: FusedLinear.apply(*t, relu=relu), (x, w, b))


class Layers(nn.Module):
    def __init__(self, variant="plain"):
        super().__init__()
        self.variant = variant
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 3)
        self.relu = nn.ReLU(inplace=variant == "inplace")

    def forward(self, x):
        if self.variant == "sequence":
            x = x.reshape(2, -1, 6)                # (a 3-D input, seen as rows: the
                                                   # relu reads a view of the product)
        h = self.fc1(x) if self.variant != "no_bias" else F.linear(x, self.fc1.weight)
        a = self.relu(h)
        if self.variant == "reused":               # the product read twice: the relu
            a = a + h                              # stays an op of its own
        return self.fc2(a)


@pytest.mark.parametrize("variant, fused, relu_fused", [
    ("plain", 2, True), ("reused", 2, False), ("inplace", 2, False), ("sequence", 2, False),
    ("no_bias", 1, False)])
def test_compile_fuses_linear_layers_only_where_safe(variant, fused, relu_fused):
    rng = np.random.default_rng(6)
    ember.manual_seed(0)
    model = Layers(variant)
    compiled = ember.compile(model)
    x0 = rng.standard_normal((4, 6)).astype(np.float32)
    g = ember.tensor(rng.standard_normal((2, 2, 3) if variant == "sequence" else (4, 3))
                     .astype(np.float32))
    for _ in range(2):   # capture, then replay
        results = []
        for m in (model, compiled):
            model.zero_grad()
            x = ember.tensor(x0, requires_grad=True)
            out = m(x)
            out.backward(g)
            results.append([out.detach().numpy(), x.grad.numpy()]
                           + [p.grad if p.grad is None else p.grad.numpy()
                              for p in model.parameters()])
        for a, e in zip(*results):
            assert (a is None) == (e is None)
            if e is not None:
                np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)
    source = list(compiled._compiled.graphs.values())[0].describe()
    assert source.count("FusedLinear") == fused
    assert ("relu=True" in source) == relu_fused
    assert ("# T " in source) == (fused < 2)


def test_a_compiled_mlp_trains_as_the_eager_one(linear_paths, monkeypatch):
    # the training replay: the incoming gradients of the fused relus are the replay's
    # own arrays, masked in place
    owned = []
    real = fused_linear._masked

    def spy(ctx, g, y, need_b):
        if y is not None:
            owned.append(ctx._owns_grad)
        return real(ctx, g, y, need_b)

    monkeypatch.setattr(fused_linear, "_masked", spy)
    rng = np.random.default_rng(7)
    ember.manual_seed(1)
    eager = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 4))
    twin = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 4))
    twin.load_state_dict(eager.state_dict())
    compiled = ember.compile(twin)
    x = ember.tensor(rng.standard_normal((9, 12)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 4, 9))
    optimizers = [ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
                  for m in (eager, twin)]
    for _ in range(4):
        for m, opt in zip((eager, compiled), optimizers):
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
        for p, q in zip(eager.parameters(), twin.parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
    graph = list(compiled._compiled.graphs.values())[0]
    assert graph.whole is not None and graph.describe().count("FusedLinear") == 3
    assert len(owned) == 2 * 3 and all(owned)   # (two relu layers, three replayed steps)


class FrozenFirst(nn.Module):
    """A linear layer under the model's own no_grad block, then a trained one."""

    def __init__(self):
        super().__init__()
        self.frozen, self.head = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x):
        with ember.no_grad():
            h = F.relu(self.frozen(x))
        return self.head(h)


def test_linear_layers_fuse_in_one_grad_mode_and_keep_it():
    # a call under no_grad fuses its layers too, and its outputs stay without a graph; a
    # layer under the model's own no_grad block is fused as a no_grad op, the layer after
    # it as a training one (its weight gets a gradient, the frozen one's does not)
    rng = np.random.default_rng(8)
    ember.manual_seed(2)
    model = FrozenFirst()
    compiled = ember.compile(model)
    x = ember.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    with ember.no_grad():
        expected = model(x)
        for _ in range(2):   # capture, then replay
            out = compiled(x)
            assert out.grad_fn is None and not out.requires_grad
            np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
    for _ in range(2):
        model.zero_grad()
        out = compiled(x)
        out.sum().backward()
        assert model.frozen.weight.grad is None and model.head.weight.grad is not None
        grads = [model.head.weight.grad.numpy().copy(), model.head.bias.grad.numpy().copy()]
        model.zero_grad()
        model(x).sum().backward()
        np.testing.assert_allclose(grads[0], model.head.weight.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(grads[1], model.head.bias.grad.numpy(), rtol=1e-6)
    sources = {key[0]: graph.describe() for key, graph in compiled._compiled.graphs.items()}
    assert sources[False].count("FusedLinear") == 2 and "no_grad" not in sources[False]
    assert sources[True].count("FusedLinear") == 2
    assert "with no_grad():\n        o0 = f0(x0, p0, p1, relu=True)" in sources[True]


class ConvBlock(nn.Module):
    """A convolution, batch norm (with or without its affine map) and an in-place ReLU,
    then a batch norm over (N, C) features."""

    def __init__(self, affine: bool):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8, affine=affine)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(8, 4)
        self.bn1d = nn.BatchNorm1d(4)

    def forward(self, x):
        h = self.relu(self.bn(self.conv(x)))
        return self.bn1d(self.head(h.mean((2, 3))))


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inference_batch_norm_is_one_op_with_the_eager_bits(affine, dtype):
    # a no_grad call of an eval-mode model: each batch norm's ten ops become one
    # InferenceBatchNorm, the replay runs on arrays, and the results are eager code's
    # bits, also after the statistics and weights change (read at every call)
    rng = np.random.default_rng(12)
    ember.manual_seed(3)
    model = ConvBlock(affine).to(ember.float32 if dtype == np.float32 else ember.float64)
    model.eval()
    with ember.no_grad():
        for bn in (model.bn, model.bn1d):
            bn.running_mean.copy_(ember.tensor(rng.standard_normal(bn.num_features)))
            bn.running_var.copy_(ember.tensor(rng.uniform(0.5, 2, bn.num_features)))
    compiled = ember.compile(model)
    x = ember.tensor(rng.standard_normal((2, 3, 6, 6)).astype(dtype))
    with ember.no_grad():
        for step in range(3):   # capture, replay, replay after new statistics
            if step == 2:
                model.bn.running_var.mul_(3.0)
                model.bn1d.running_mean.add_(1.0)
                if affine:
                    model.bn.weight.mul_(-2.0)
            out = compiled(x)
            expected = model(x)
            assert out.grad_fn is None and not out.requires_grad and out.dtype == expected.dtype
            np.testing.assert_array_equal(out.numpy(), expected.numpy())
    graph = list(compiled._compiled.graphs.values())[0]
    assert graph.unrecorded is not None
    assert graph.describe().count("InferenceBatchNorm") == 2
    assert "Rsqrt" not in graph.describe()


def test_batch_norm_keeps_its_ops_where_gradients_flow():
    # an eval-mode batch norm in a training call (fine-tuning with frozen statistics):
    # its ops stay, and the compiled gradients are the eager ones
    rng = np.random.default_rng(13)
    ember.manual_seed(4)
    model = ConvBlock(True)
    model.eval()
    compiled = ember.compile(model)
    x0 = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    for _ in range(2):   # capture, then replay
        results = []
        for m in (model, compiled):
            model.zero_grad()
            x = ember.tensor(x0, requires_grad=True)
            m(x).sum().backward()
            results.append([x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()])
        for a, e in zip(*results):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    source = list(compiled._compiled.graphs.values())[0].describe()
    assert "InferenceBatchNorm" not in source


def test_inference_batch_norm_has_no_backward():
    x = ember.ones(1, 2, 2, 2)
    mean, var = ember.zeros(2), ember.ones(2)
    from ember.ops.normalization import InferenceBatchNorm

    with ember.no_grad():
        out = InferenceBatchNorm.apply(x, mean, var, None, None, 1e-5)
    np.testing.assert_allclose(out.numpy(), np.full((1, 2, 2, 2), 1 / np.sqrt(1 + 1e-5)),
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match="no backward"):
        InferenceBatchNorm.backward(None, x)


def test_attention_under_no_grad_is_one_call_on_its_inference_path(monkeypatch):
    # a capture under no_grad records multi-head attention as one call, replayed by
    # calling it with one tensor for query, key and value (as the traced call got one),
    # so it takes its path on the arrays; the results are eager code's bits
    from ember.ops import attention

    ember.manual_seed(5)
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    compiled = ember.compile(layer)
    x = ember.tensor(np.random.default_rng(5).standard_normal((2, 6, 32)).astype(np.float32))
    calls = []
    real = attention._self_attention_arrays
    monkeypatch.setattr(attention, "_self_attention_arrays",
                        lambda *a: calls.append(1) or real(*a))
    with ember.no_grad():
        expected = layer(x)
        compiled(x)              # capture
        calls.clear()
        got = compiled(x)        # replay
    assert calls == [1]
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    source = list(compiled._compiled.graphs.values())[0].describe()
    assert "multi_head_attention_forward" in source and "Softmax" not in source
    assert "dropout" not in source   # (nn.Dropout in eval mode calls nothing)
    assert layer.dropout(x) is x
