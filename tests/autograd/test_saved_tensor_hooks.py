"""saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks, the saved-tensor
memory report and the `total_loss += loss` leak warning."""

import gc
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import Function
from ember.autograd.graph import (
    disable_saved_tensors_hooks, save_on_cpu, saved_tensor_report, saved_tensors_hooks,
)


def _grads(fn, *leaves):
    for t in leaves:
        t.grad = None
    fn().backward()
    return [t.grad.clone() for t in leaves]


def test_pack_and_unpack_are_called_and_used():
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, dtype=ember.float64, requires_grad=True)
    plain = _grads(lambda: (x * w).exp().sum(), x, w)
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.detach().numpy().copy()  # keep only a NumPy copy

    def unpack(a):
        unpacked.append(a.shape)
        return ember.from_numpy(a)

    with saved_tensors_hooks(pack, unpack):
        y = (x * w).exp().sum()
    assert len(packed) == 3  # mul saves x and w, exp saves its output
    x.grad = w.grad = None
    y.backward()
    assert len(unpacked) == 3
    assert all(ember.equal(a, b) for a, b in zip(plain, [x.grad, w.grad]))


def test_innermost_hooks_win_and_state_is_restored():
    calls = []
    outer = saved_tensors_hooks(lambda t: (calls.append("outer"), t)[1], lambda t: t)
    inner = saved_tensors_hooks(lambda t: (calls.append("inner"), t)[1], lambda t: t)
    x = ember.randn(3, requires_grad=True)
    with outer:
        with inner:
            x.exp()
        x.sin()
    x.cos()
    assert calls == ["inner", "outer"]
    assert ember._core.grad_mode.STATE.saved_hooks is None


def test_version_check_survives_packing():
    x = ember.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = x * 1
        z = y.exp()  # saves its output
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = x * 1
        z = y.sin()  # saves its input y
    y.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        z.sum().backward()


def test_unpack_must_return_a_tensor():
    x = ember.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: 1, lambda p: p):
        y = x.exp()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.sum().backward()


def test_double_backward_through_packed_tensors():
    x = ember.tensor([0.5, -1.5, 2.0], dtype=ember.float64, requires_grad=True)
    with saved_tensors_hooks(lambda t: ember.from_numpy(t.detach().numpy().copy()),
                             lambda t: t):
        y = (x * x * x).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    assert np.allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    assert np.allclose(gg.numpy(), 6 * x.detach().numpy())


def test_custom_function_and_module_under_hooks():
    class Square(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            return 2 * t * grad

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    seen = []
    with saved_tensors_hooks(lambda t: (seen.append(t), t.clone())[1], lambda t: t):
        y = Square.apply(x).sum()
    y.backward()
    assert len(seen) == 1
    assert ember.allclose(x.grad, 2 * x.detach())


def test_pack_that_computes_runs_without_recording():
    # pack runs with grad mode off (as in PyTorch): `t * 2` inside it records nothing, so it
    # does not save its own inputs through pack again (this recursed without end).
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    modes = []

    def pack(t):
        modes.append(ember.is_grad_enabled())
        return t * 2

    with saved_tensors_hooks(pack, lambda t: t):
        y = (x * x).sum()
        z = x.exp().sum()
    assert modes == [False, False, False]
    # both saved factors of x * x come back doubled: d/dx = 2 * (2x)
    assert ember.autograd.grad(y, x)[0].tolist() == [4.0, 8.0, 12.0]
    # exp saves its output: 2 exp(x)
    np.testing.assert_allclose(ember.autograd.grad(z, x)[0].numpy(), 2 * np.exp([1.0, 2.0, 3.0]))


def test_unpack_that_changes_the_value():
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t * 2):
        y = (x * x).sum()
        y.backward()  # (unpack runs inside the hooks' block too)
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    with saved_tensors_hooks(lambda t: t * 2, lambda t: t * 3):
        z = x.exp().sum()
    np.testing.assert_allclose(ember.autograd.grad(z, x)[0].numpy(), 6 * np.exp([1.0, 2.0, 3.0]))


def _changing_hooks_trace(lib):
    """Gradients under hooks that change the saved values (first and second order, ops and
    a custom Function), for comparison with PyTorch."""
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    graph = lib.autograd.graph
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2):
        y = (x * x * x).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    with graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t * 3):
        s = lib.sigmoid(x).sum()
    (gs,) = lib.autograd.grad(s, x)

    class Sin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.sin()

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * a.cos()

    with graph.saved_tensors_hooks(lambda t: t + 1, lambda t: t * 2):
        f = Sin.apply(x).sum()
    (gf,) = lib.autograd.grad(f, x)
    return [t.detach().numpy() for t in (g, gg, gs, gf)]


def test_hooks_that_change_values_by_hand():
    g, gg, _, gf = _changing_hooks_trace(ember)
    x = np.array([1.0, 2.0, 3.0])
    # (x*x)*x with every saved factor doubled: 2x^2 from the outer product, 8x^2 from x*x
    np.testing.assert_allclose(g, 10 * x ** 2)
    # An unpacked factor is re-attached where the saved tensor was (a doubled x counts as x):
    # 8x from the two products in x*x's backward, 4x through x*x's node again.
    np.testing.assert_allclose(gg, 12 * x)
    np.testing.assert_allclose(gf, np.cos(2 * (x + 1)))


def test_hooks_that_change_values_match_pytorch():
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(_changing_hooks_trace(ember), _changing_hooks_trace(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_save_on_cpu():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1)).double()
    x = ember.randn(3, 4, dtype=ember.float64)
    params = list(model.parameters())
    plain = _grads(lambda: model(x).sum(), *params)
    model.zero_grad()
    with save_on_cpu(pin_memory=True):
        out = model(x).sum()
    out.backward()
    assert all(ember.equal(a, p.grad) for a, p in zip(plain, params))


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="not now"):
            with disable_saved_tensors_hooks("not now"):
                pass

    @disable_saved_tensors_hooks("decorated")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="decorated"):
        f()
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again afterwards
        pass


def test_no_reference_cycle_through_packed_outputs():
    gc.disable()
    try:
        x = ember.randn(3, requires_grad=True)
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            y = x.exp()  # exp saves its own output
        import weakref

        ref = weakref.ref(y.grad_fn)
        del y
        assert ref() is None
    finally:
        gc.enable()


def test_saved_tensor_report():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = ember.randn(5, 8)
    loss = model(x).sum()
    report = saved_tensor_report(loss)
    sizes = [row.nbytes for row in report]
    assert sizes == sorted(sizes, reverse=True)
    names = sorted(row.name for row in report)
    assert names.count("ReluBackward0") == 1
    # the relu output (5x16 float32) is the one activation; weights and x are leaves
    assert report.activation_bytes == 5 * 16 * 4
    assert report.total_bytes == 5 * 16 * 4 + 5 * 8 * 4 + 8 * 16 * 4 + 16 * 4 * 4
    text = str(report)
    assert "ReluBackward0" in text and "activations" in text
    loss.backward()
    assert saved_tensor_report(loss).total_bytes == 0  # freed by backward
    with saved_tensors_hooks(lambda t: None, lambda p: p):
        packed = model(x).sum()
    assert saved_tensor_report(packed).packed > 0


def test_leak_warning_once_per_line():
    ember.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = 0
        for _ in range(3):
            loss = model(ember.randn(4, 3)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss  # the leak
        good = 0.0
        for _ in range(3):
            loss = model(ember.randn(4, 3)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            good += loss.item()
            detached = ember.zeros(()) + loss.detach()
    leaks = [w for w in caught if "accumulated across optimizer steps" in str(w.message)]
    assert len(leaks) == 1
    assert leaks[0].filename == __file__
    assert f"{__file__}:{leaks[0].lineno}" in str(leaks[0].message)
    assert detached.grad_fn is None


def _leak_warnings(run) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if "accumulated across optimizer steps" in str(w.message)]


def test_leak_warning_for_out_of_place_and_scaled_sums():
    ember.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)

    def run():
        total, weighted = 0, 0
        for _ in range(3):
            loss = model(ember.randn(4, 3)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total = total + loss  # the leak, written out of place
            weighted += loss * 4  # and weighted by the batch size
    assert len(_leak_warnings(run)) == 2


def test_no_leak_warning_for_a_sum_of_losses_after_two_steps():
    # A GAN step: both losses are recorded before the two optimizer steps and added up
    # afterwards for printing; the sum keeps no graph past its line.
    ember.manual_seed(0)
    d, g = nn.Linear(3, 1), nn.Linear(2, 3)
    opt_d = ember.optim.SGD(d.parameters(), lr=0.01)
    opt_g = ember.optim.SGD(g.parameters(), lr=0.01)

    def run():
        for _ in range(3):
            loss_real = d(ember.randn(4, 3)).pow(2).mean()
            loss_fake = d(g(ember.randn(4, 2)).detach()).pow(2).mean()
            opt_d.zero_grad()
            (loss_real + loss_fake).backward()
            opt_d.step()
            loss_g = d(g(ember.randn(4, 2))).pow(2).mean()
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            assert (loss_real + loss_fake + loss_g).item() >= 0
    assert _leak_warnings(run) == []
