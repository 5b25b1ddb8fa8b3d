"""The fused (numba) optimizer steps of ember/optim/_fused.py against the NumPy rules.

The default path of SGD, Adam and AdamW is the fused one when numba is installed, so
tests/optim/test_optimizers.py checks it against the float64 reference rules; here the
NumPy path (``use_numba(False)`` and ``fused=False``) is checked the same way, and both
paths are compared on float32 parameters large enough for the multi-threaded blocks.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.optim import _fused
from ember.ops import _native as native
from tests.optim.test_optimizers import CASES, IDS, run_framework, run_reference

FUSED_NAMES = ("SGD", "Adam", "AdamW", "Adadelta")
FUSED = [(case, i) for case, i in zip(CASES, IDS) if case[0] in FUSED_NAMES]
FUSED_CASES = [case for case, _ in FUSED]
FUSED_IDS = [i for _, i in FUSED]

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.mark.parametrize("problem", ["quadratic", "mlp"])
@pytest.mark.parametrize("name,options", FUSED_CASES, ids=FUSED_IDS)
def test_numpy_path_follows_reference_rule(name, options, problem):
    with native.use_numba(False):
        ours = run_framework(ember, name, options, problem, np.float64)
    np.testing.assert_allclose(ours, run_reference(name, options, problem), rtol=1e-7,
                               atol=1e-9)


def _large_run(name, options, steps=4, size=(520, 512), dtype=np.float32):
    """Parameters after `steps` steps on fixed random gradients (float32, > PARALLEL_MIN)."""
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(size).astype(dtype), rng.standard_normal(31).astype(dtype)]
    grads = [[rng.standard_normal(v.shape).astype(dtype) for v in values]
             for _ in range(steps)]
    params = [ember.tensor(v, requires_grad=True) for v in values]
    opt = getattr(ember.optim, name)(params, lr=0.03, **options)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = ember.tensor(g)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


@needs_numba
@pytest.mark.parametrize("name,options", FUSED_CASES, ids=FUSED_IDS)
def test_fused_equals_numpy_rule_in_float32(name, options, monkeypatch):
    # the large parameter takes the threaded blocks (on two threads the ops' threshold
    # would keep it serial, or split it in two: not here), the small one the serial loop
    monkeypatch.setattr(native, "PARALLEL_MIN", 1 << 16)
    monkeypatch.setattr(native, "SPLIT_MIN", 1 << 40)
    sizes = [p.size for p in _large_run(name, {}, steps=0)[0]]
    assert _fused._threaded(sizes[0]) and not _fused._threaded(sizes[1])
    options = {k: v for k, v in options.items() if k != "lr"}
    fused, opt = _large_run(name, options)
    with native.use_numba(False):
        plain, plain_opt = _large_run(name, options)
    assert not np.allclose(fused[0], _large_run(name, options, steps=0)[0][0])
    for a, b in zip(fused, plain):
        # same operations in the same order: at most a rounding apart
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)
    for state, plain_state in zip(opt.state.values(), plain_opt.state.values()):
        for key, value in state.items():
            np.testing.assert_allclose(value.numpy(), plain_state[key].numpy(), rtol=2e-6,
                                       atol=1e-7)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,options", FUSED_CASES, ids=FUSED_IDS)
def test_update_split_with_a_worker_equals_the_serial_loop(name, options, dtype,
                                                           monkeypatch):
    """On two threads a large parameter's second half is updated on a worker, as a
    native part (ops/_native_parts.py): bit for bit what the serial loop gives."""
    from ember.ops import _native_cuts

    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(native, "SPLIT_MIN", 1 << 10)
    options = {k: v for k, v in options.items() if k != "lr"}
    run_cut, calls = _native_cuts.run_cut, []

    def counted(*args):
        done = run_cut(*args)
        calls.append(done)
        return done

    try:
        monkeypatch.setattr(_native_cuts, "run_cut", counted)
        split, opt = _large_run(name, options, size=(61, 37), dtype=dtype)
        assert calls and all(calls)          # (the 31-element bias stays whole)
        monkeypatch.setattr(_native_cuts, "run_cut", lambda *args: False)
        serial, serial_opt = _large_run(name, options, size=(61, 37), dtype=dtype)
    finally:
        ember.set_num_threads(before)
    for a, b in zip(split, serial):
        np.testing.assert_array_equal(a, b)
    for state, serial_state in zip(opt.state.values(), serial_opt.state.values()):
        for key, value in state.items():
            np.testing.assert_array_equal(value.numpy(), serial_state[key].numpy())


@needs_numba
def test_a_busy_worker_leaves_the_update_on_the_caller(monkeypatch):
    from ember.ops import _parallel

    monkeypatch.setattr(native, "SPLIT_MIN", 1 << 10)
    monkeypatch.setattr(_parallel, "_claim", lambda: None)  # (another split running)
    p, g, buf = (np.full(5000, v, np.float32) for v in (1.0, 2.0, 0.5))
    _fused.sgd_step(p, g, buf, lr=0.5, momentum=0.5, dampening=0.0, weight_decay=0.0,
                    nesterov=False, maximize=False, first=False)
    np.testing.assert_array_equal(buf, np.full(5000, 2.25, np.float32))   # 0.5 * 0.5 + 2
    np.testing.assert_array_equal(p, np.full(5000, -0.125, np.float32))   # 1 - 0.5 * 2.25


@needs_numba
def test_fused_false_takes_the_numpy_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the fused kernel ran")

    monkeypatch.setattr(_fused, "adam_step", refuse)
    monkeypatch.setattr(_fused, "sgd_step", refuse)
    for cls, kw in ((ember.optim.Adam, {}), (ember.optim.SGD, {"momentum": 0.9})):
        p = ember.tensor([1.0, 2.0], requires_grad=True)
        p.grad = ember.tensor([0.5, -0.5])
        cls([p], lr=0.1, fused=False, **kw).step()
        with pytest.raises(AssertionError, match="fused kernel ran"):
            cls([p], lr=0.1, **kw).step()


@needs_numba
def test_non_contiguous_gradient_falls_back():
    w = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    g = np.asfortranarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    results = []
    for flag in (True, False):
        with native.use_numba(flag):
            p = ember.tensor(w.copy(), requires_grad=True)
            p.grad = ember.tensor(g)
            assert not p.grad.numpy().flags.c_contiguous
            opt = ember.optim.AdamW([p], lr=0.1)
            opt.step()
            opt.step()
            results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_sgd_first_step_fills_the_momentum_buffer():
    p = ember.tensor([1.0, -1.0], requires_grad=True)
    p.grad = ember.tensor([0.5, 2.0])
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.5)
    opt.step()
    # d = g + 0.5 p = [1.0, 1.5]; buffer = d; p -= 0.1 d
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), [1.0, 1.5])
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -1.15])


@pytest.mark.parametrize("cls", ["Adam", "AdamW", "SGD"])
def test_fused_flag_errors_as_pytorch(cls):
    p = [ember.tensor([1.0], requires_grad=True)]
    opt = getattr(ember.optim, cls)
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        opt(p, lr=0.1, fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="does not support `differentiable`"):
        opt(p, lr=0.1, fused=True, differentiable=True)
    opt(p, lr=0.1, fused=True).step()  # accepted on the CPU, as in PyTorch


SGD_OPTIONS = [{"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
               {"momentum": 0.5, "dampening": 0.3, "maximize": True}, {}]


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", SGD_OPTIONS, ids=["momentum", "nesterov", "dampening",
                                                      "plain"])
def test_sgd_group_step_equals_the_loop_over_parameters(monkeypatch, dtype, options):
    # SGD._step_group (one loop over the kernel's calls) gives the bits of the base
    # class's loop, from the second step on (the first makes the momentum buffers), and
    # moves each parameter's version as the loop does
    taken = []
    real = ember.optim.SGD._step_group

    def spy(self, group, states):
        taken.append(real(self, group, states))
        return taken[-1]

    results = []
    for group_step in (True, False):
        if group_step:
            monkeypatch.setattr(ember.optim.SGD, "_step_group", spy)
        else:
            monkeypatch.setattr(ember.optim.SGD, "_step_group", lambda self, *a: False)
        params, opt = _large_run("SGD", options, steps=3, size=(70, 9), dtype=dtype)
        tensors = opt.param_groups[0]["params"]
        buffers = [opt.state[p]["momentum_buffer"].numpy() for p in tensors] if options \
            else []
        results.append((params, buffers, [p._version.value for p in tensors]))
    assert taken == ([False, True, True] if options.get("momentum") else [True] * 3)
    for got, expected in zip(*[r[0] + r[1] for r in results]):
        np.testing.assert_array_equal(got, expected)
    assert results[0][2] == results[1][2]


@needs_numba
def test_sgd_group_step_leaves_unusual_groups_to_the_loop():
    rng = np.random.default_rng(8)
    a = ember.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True)
    b = ember.tensor(rng.standard_normal(5), requires_grad=True)        # float64
    opt = ember.optim.SGD([a, b], lr=0.1, momentum=0.9)
    for p in (a, b):
        p.grad = ember.ones_like(p)
    opt.step()                                   # (makes the buffers)
    group, states = opt.param_groups[0], opt.state
    assert not opt._step_group(group, states)    # two dtypes
    c = ember.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    c.grad = ember.ones(6, 4).t()                # a gradient that is not C-contiguous
    opt = ember.optim.SGD([c], lr=0.1)
    assert not opt._step_group(opt.param_groups[0], opt.state)
    before = c.detach().numpy().copy()
    opt.step()                                   # (the loop's NumPy rule takes it)
    np.testing.assert_allclose(c.detach().numpy(), before - 0.1, rtol=1e-6)
    with native.use_numba(False):
        assert not opt._step_group(opt.param_groups[0], opt.state)
