"""Activation checkpointing: gradients equal to the plain run, to the bit in float64
(dropout included), both variants, checkpoint_sequential, selective checkpointing and
the memory budget (its peak stays within the budget)."""

import functools
import warnings

import pytest

import ember
from ember import nn
from ember.autograd.graph import saved_tensor_report
from ember.autograd.selective_checkpoint import (
    CheckpointPolicy, MemoryBudget, plan_memory_budget,
)
from ember.profiler import profile
from ember.utils.checkpoint import (
    CheckpointError, checkpoint, checkpoint_sequential, create_selective_checkpoint_contexts,
)


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 8),
                         nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 3)).double()


def _run(model, x, fn):
    """Outputs and gradients (parameters and input) of ``fn(x)``, from a fixed seed."""
    model.zero_grad()
    x.grad = None
    ember.manual_seed(123)
    out = fn(x)
    out.pow(2).sum().backward()
    return [out.detach()] + [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]


def _identical(a, b):
    return all(ember.equal(u, v) for u, v in zip(a, b))


def _sac(ops):
    return functools.partial(create_selective_checkpoint_contexts, ops)


VARIANTS = {
    "reentrant": lambda m: lambda x: checkpoint(m, x, use_reentrant=True),
    "non-reentrant": lambda m: lambda x: checkpoint(m, x, use_reentrant=False),
    "sequential": lambda m: lambda x: checkpoint_sequential(m, 3, x, use_reentrant=False),
    "sequential-reentrant": lambda m: lambda x: checkpoint_sequential(m, 3, x,
                                                                      use_reentrant=True),
    "selective": lambda m: lambda x: checkpoint(m, x, use_reentrant=False,
                                                context_fn=_sac(["add_product", "tanh"])),
    "budget": lambda m: lambda x: MemoryBudget(0)(m, x),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gradients_equal_the_plain_run_to_the_bit(variant):
    model = _model()
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    plain = _run(model, x, model)
    assert _identical(plain, _run(model, x, VARIANTS[variant](model)))


def test_non_reentrant_keeps_no_activations():
    model = _model()
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    plain = model(x).sum()
    ckpt = checkpoint(model, x, use_reentrant=False).sum()
    assert saved_tensor_report(plain).activation_bytes > 0
    report = saved_tensor_report(ckpt)
    assert report.total_bytes == 0 and report.packed > 0


def test_random_state_is_restored_for_the_caller():
    model = _model()
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    ember.manual_seed(5)
    checkpoint(model, x, use_reentrant=False).sum().backward()
    after_ckpt = ember.rand(3)
    ember.manual_seed(5)
    model(x).sum().backward()
    assert ember.equal(after_ckpt, ember.rand(3))


def test_without_preserved_rng_the_masks_differ():
    model = _model()
    x = ember.randn(64, 6, dtype=ember.float64, requires_grad=True)
    plain = _run(model, x, model)
    loose = _run(model, x, lambda t: checkpoint(model, t, use_reentrant=False,
                                                preserve_rng_state=False))
    assert not _identical(plain, loose)


def test_kwargs_and_autograd_grad_non_reentrant():
    w = ember.randn(3, dtype=ember.float64, requires_grad=True)

    def f(x, *, scale):
        return (x * w).sin() * scale

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False, scale=2.0).sum()
    gx, gw = ember.autograd.grad(out, (x, w))
    ref_x, ref_w = ember.autograd.grad(f(x, scale=2.0).sum(), (x, w))
    assert ember.equal(gx, ref_x) and ember.equal(gw, ref_w)


def test_nested_checkpoints():
    w = ember.randn(3, dtype=ember.float64, requires_grad=True)

    def inner(t):
        return (t * w).exp()

    def outer(t):
        return checkpoint(inner, t.sin(), use_reentrant=False).cos()

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    got = ember.autograd.grad(checkpoint(outer, x, use_reentrant=False).sum(), (x, w))
    want = ember.autograd.grad(outer(x).sum(), (x, w))
    assert all(ember.equal(a, b) for a, b in zip(got, want))


def test_use_reentrant_warning_and_argument_errors():
    x = ember.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint(lambda t: t.sin(), x)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint_sequential([nn.ReLU(), nn.ReLU()], 2, x)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t.sin(), x, use_reentrant=True, context_fn=_sac([]))
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(lambda t: t.sin(), x, use_reentrant=True, foo=1)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t.sin(), x, use_reentrant=False, determinism_check="bad")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checkpoint(lambda t: t.sin(), ember.randn(3), use_reentrant=True)
    assert any("None of the inputs have requires_grad=True" in str(w.message) for w in caught)


def test_determinism_check():
    calls = []

    def changing(t):
        calls.append(1)
        return (t[: 3 - len(calls) % 2] * 2).sum()  # a different shape on recompute

    x = ember.randn(4, requires_grad=True)
    out = checkpoint(changing, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        out.backward()


def test_selective_policy_skips_saved_ops_in_recompute():
    w = ember.randn(8, 8, dtype=ember.float64, requires_grad=True)

    def block(t):
        return (t @ w).exp().tanh()

    x = ember.randn(4, 8, dtype=ember.float64, requires_grad=True)

    def count_exp(context_fn):
        with profile() as prof:
            checkpoint(block, x, use_reentrant=False, context_fn=context_fn).sum().backward()
        # (exp's and tanh's backward formulas run no exp)
        return sum(1 for e in prof.events() if e.name == "exp" and e.kind == "op")

    assert count_exp(_sac([])) == 2  # run, then recomputed
    assert count_exp(_sac(["exp"])) == 1  # cached: not recomputed

    def policy(ctx, op, *args, **kwargs):
        assert not ctx.is_recompute
        return CheckpointPolicy.MUST_SAVE if op.__name__ == "Exp" else \
            CheckpointPolicy.PREFER_RECOMPUTE

    assert count_exp(functools.partial(create_selective_checkpoint_contexts, policy)) == 1
    with pytest.raises(TypeError):
        create_selective_checkpoint_contexts(42)


def test_cached_output_mutation_is_refused():
    w = ember.randn(3, dtype=ember.float64, requires_grad=True)

    def block(t):
        y = (t * w).exp()
        y.mul_(2)  # an in-place change of a cached output, inside the function
        return y.sin()

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False, context_fn=_sac(["exp"])).sum()
    with pytest.raises(RuntimeError, match="allow_cache_entry_mutation"):
        out.backward()


def _deep_mlp(layers=8, width=32):
    ember.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*mods)


@pytest.mark.parametrize("fraction", [0.75, 0.5, 0.4])
def test_budget_keeps_peak_within_budget(fraction):
    model = _deep_mlp()
    x = ember.randn(16, 32)
    plain_bytes = saved_tensor_report(model(x).sum()).activation_bytes
    params = list(model.parameters())
    model.zero_grad()
    model(x).sum().backward()
    plain = [p.grad.clone() for p in params]
    budget = int(plain_bytes * fraction)
    plan = plan_memory_budget(model, x, budget_bytes=budget)
    assert plan.plain_bytes == plain_bytes
    assert plan.feasible and plan.kept_bytes + plan.reserve_bytes <= budget
    assert 0 < len(plan.dropped) <= 8
    model.zero_grad()
    out = plan.run(model, x).sum()
    out.backward()
    assert 0 < plan.peak_bytes <= budget
    assert all(ember.equal(a, p.grad) for a, p in zip(plain, params))
    text = str(plan)
    assert "dropped" in text and "measured peak" in text


def test_budget_reuse_and_mismatch_warning():
    model = _deep_mlp(layers=3)
    budget = MemoryBudget(10**9)  # everything fits: nothing dropped
    budget(model, ember.randn(4, 32)).sum().backward()
    assert budget.plan is not None and not budget.plan.dropped
    plan = plan_memory_budget(model, ember.randn(4, 32), budget_bytes=0)
    with pytest.warns(RuntimeWarning, match="different ops"):
        plan.run(lambda t: model(t).exp(), ember.randn(4, 32)).sum().backward()
    with pytest.warns(RuntimeWarning, match="different ops"):
        plan.run(lambda t: t.exp(), ember.randn(4, 32))


@pytest.mark.parametrize("variant", ["reentrant", "non-reentrant", "budget"])
def test_graphs_are_freed_without_the_garbage_collector(variant):
    import gc
    import weakref

    model = _deep_mlp(layers=2, width=4)
    x = ember.randn(2, 4, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        out = VARIANTS[variant](model)(x)
        ref = weakref.ref(out.grad_fn)
        out.sum().backward()
        del out
        assert ref() is None
        assert gc.collect() == 0
    finally:
        gc.enable()
