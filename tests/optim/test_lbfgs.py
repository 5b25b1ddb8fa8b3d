"""LBFGS: convergence on the Rosenbrock function, parity with PyTorch, options and state."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember


def rosenbrock(x):
    """sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2), written with tensor ops of either library."""
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def rosenbrock_grad(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    a, b = x[:-1], x[1:]
    g[:-1] = -400 * a * (b - a * a) - 2 * (1 - a)
    g[1:] += 200 * (b - a * a)
    return g


def run(lib, dtype, steps=6, x0=(-1.5, 2.0, 0.5, -0.3), analytic=True, **options):
    """Parameter values after each ``step`` (each step runs up to max_iter iterations)."""
    x = lib.tensor(np.array(x0, dtype=dtype), requires_grad=True)
    opt = lib.optim.LBFGS([x], **options)
    evaluations = []

    def closure():
        opt.zero_grad()
        if analytic:
            value = x.detach().numpy().astype(np.float64)
            x.grad = lib.tensor(rosenbrock_grad(value).astype(dtype))
            loss = lib.tensor(np.array(rosenbrock_np(value), dtype=dtype))
        else:
            loss = rosenbrock(x)
            loss.backward()
        evaluations.append(1)
        return loss

    rows = []
    for _ in range(steps):
        opt.step(closure)
        rows.append(x.detach().numpy().astype(np.float64).copy())
    return np.array(rows), opt, len(evaluations)


def rosenbrock_np(x):
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_converges_on_rosenbrock(line_search_fn):
    # (from this start, not the basin of the 4-d function's other local minimum near x0=-0.78)
    lr = 1 if line_search_fn else 0.2
    rows, opt, _ = run(ember, np.float64, steps=30, x0=(0.3, -0.5, 0.8, 1.5), lr=lr,
                       line_search_fn=line_search_fn, max_iter=20)
    np.testing.assert_allclose(rows[-1], np.ones(4), atol=1e-4)
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
            "prev_flat_grad", "prev_loss"} <= set(state)


@pytest.mark.parametrize("options", [
    {"line_search_fn": "strong_wolfe"},
    {"line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 7},
    {"line_search_fn": "strong_wolfe", "tolerance_grad": 1e-3, "tolerance_change": 1e-4},
    {"lr": 0.1, "max_iter": 5},
    {"lr": 0.2, "history_size": 2, "max_eval": 8},
], ids=str)
def test_matches_pytorch_on_rosenbrock(options):
    torch = pytest.importorskip("torch")
    ours, opt, n_ours = run(ember, np.float64, analytic=False, **options)
    theirs, topt, n_theirs = run(torch, np.float64, analytic=False, **options)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    assert n_ours == n_theirs
    ours_state = opt.state[opt.param_groups[0]["params"][0]]
    theirs_state = topt.state[topt.param_groups[0]["params"][0]]
    assert ours_state["func_evals"] == theirs_state["func_evals"]
    assert ours_state["n_iter"] == theirs_state["n_iter"]
    assert len(ours_state["old_dirs"]) == len(theirs_state["old_dirs"])


def test_float32_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours, _, _ = run(ember, np.float32, steps=3, analytic=False, line_search_fn="strong_wolfe")
    theirs, _, _ = run(torch, np.float32, steps=3, analytic=False,
                       line_search_fn="strong_wolfe")
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4)


def test_state_dict_resume():
    rows, opt, _ = run(ember, np.float64, steps=2, line_search_fn="strong_wolfe", max_iter=4)
    saved = copy.deepcopy(opt.state_dict())
    x = opt.param_groups[0]["params"][0]
    value = x.detach().numpy().copy()

    def closure_for(t, o):
        def closure():
            o.zero_grad()
            v = t.detach().numpy()
            t.grad = ember.tensor(rosenbrock_grad(v))
            return ember.tensor(rosenbrock_np(v))
        return closure

    for _ in range(3):
        opt.step(closure_for(x, opt))
    expected = x.detach().numpy()

    y = ember.tensor(value, requires_grad=True)
    fresh = ember.optim.LBFGS([y], line_search_fn="strong_wolfe", max_iter=4)
    fresh.load_state_dict(saved)
    for _ in range(3):
        fresh.step(closure_for(y, fresh))
    np.testing.assert_array_equal(y.detach().numpy(), expected)


def test_errors():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        ember.optim.LBFGS([{"params": [x]}, {"params": [y]}])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        ember.optim.LBFGS([x], lr=-1)
    opt = ember.optim.LBFGS([x], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_stops_at_optimum_and_returns_first_loss():
    x = ember.tensor([1.0, 1.0, 1.0], requires_grad=True)
    opt = ember.optim.LBFGS([x])
    calls = []

    def closure():
        opt.zero_grad()
        loss = ((x - 1) * (x - 1)).sum()
        loss.backward()
        calls.append(float(loss))
        return loss

    loss = opt.step(closure)
    assert float(loss) == 0.0 and calls == [0.0]
