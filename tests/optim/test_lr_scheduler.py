"""Learning-rate schedulers: 100-epoch sequences against PyTorch (exactly), closed forms,
state_dict round trips and the step-order warning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember.optim import lr_scheduler as ember_sched

EPOCHS = 100
METRICS = [1.0 / (1 + i) if i < 30 else 0.03 + 0.001 * ((i * 7) % 5) for i in range(EPOCHS)]


def make_optimizer(lib, kind="sgd", groups=2):
    params = [lib.tensor([1.0, 2.0], requires_grad=True) for _ in range(groups)]
    group_list = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)]
    if kind == "adam":
        return lib.optim.Adam(group_list, lr=0.1)
    return lib.optim.SGD(group_list, lr=0.1, momentum=0.9)


def scale(epoch):
    return 0.95 ** epoch


class Lambda:
    """A callable object (its __dict__ is saved in state dicts)."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return 1.0 / (1 + self.rate * epoch)


# name -> function(lib, optimizer) -> scheduler; sched is the library's lr_scheduler module
SCHEDULERS = {
    "LambdaLR": lambda s, o: s.LambdaLR(o, scale),
    "LambdaLR-list": lambda s, o: s.LambdaLR(o, [scale, Lambda(0.1)]),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lambda e: 0.97),
    "StepLR": lambda s, o: s.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[10, 25, 25, 60], gamma=0.3),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=8),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=30),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=60, power=2.0),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=30, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(
        o, T_0=10, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts-1": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=7),
    "CyclicLR-triangular": lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=6, step_size_down=4),
    "CyclicLR-triangular2": lambda s, o: s.CyclicLR(o, base_lr=[0.01, 0.02],
                                                    max_lr=[0.1, 0.3], step_size_up=5,
                                                    mode="triangular2"),
    "CyclicLR-exp_range": lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                  step_size_up=8, mode="exp_range",
                                                  gamma=0.98, base_momentum=0.7),
    "CyclicLR-scale_fn": lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=5,
                                                 scale_fn=lambda x: 0.5 ** x,
                                                 scale_mode="iterations",
                                                 cycle_momentum=False),
    "OneCycleLR-cos": lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=EPOCHS + 1),
    "OneCycleLR-linear": lambda s, o: s.OneCycleLR(o, max_lr=[0.5, 1.0], epochs=10,
                                                   steps_per_epoch=11, pct_start=0.25,
                                                   anneal_strategy="linear"),
    "OneCycleLR-three_phase": lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=EPOCHS + 1,
                                                        three_phase=True, div_factor=10.0,
                                                        final_div_factor=100.0),
    "SequentialLR": lambda s, o: s.SequentialLR(
        o, [s.LinearLR(o, start_factor=0.1, total_iters=10), s.ExponentialLR(o, gamma=0.9),
            s.CosineAnnealingLR(o, T_max=20)], milestones=[10, 40]),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler(
        [s.ConstantLR(o, factor=0.5, total_iters=5), s.ExponentialLR(o, gamma=0.95),
         s.StepLR(o, step_size=10, gamma=0.7)]),
}

PLATEAU = {
    "min-rel": {},
    "max-abs": {"mode": "max", "threshold_mode": "abs", "threshold": 0.01, "patience": 2},
    "min-abs-cooldown": {"threshold_mode": "abs", "patience": 3, "cooldown": 4, "factor": 0.5,
                         "min_lr": [0.002, 0.01]},
    "min-rel-eps": {"patience": 1, "factor": 0.2, "eps": 1e-3, "min_lr": 1e-4},
}


def lr_sequence(lib, key, kind="sgd", epochs=EPOCHS):
    """Learning rates (and momenta) of both groups after creation and after each step."""
    opt = make_optimizer(lib, "adam" if kind == "adam" else "sgd")
    sched = SCHEDULERS[key](lib.optim.lr_scheduler, opt)
    rows = []

    def record():
        groups = opt.param_groups
        rows.append([g["lr"] for g in groups]
                    + [g["betas"][0] if "betas" in g else g.get("momentum") for g in groups])

    record()
    for _ in range(epochs):
        opt.step()
        sched.step()
        record()
    return rows, sched


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_matches_pytorch_exactly(key, kind):
    torch = _torch()
    if kind == "adam" and not (key.startswith("Cyclic") or key.startswith("OneCycle")):
        pytest.skip("momentum cycling only")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, sched = lr_sequence(ember, key, kind)
        theirs, tsched = lr_sequence(torch, key, kind)
    assert ours == theirs
    assert sched.get_last_lr() == tsched.get_last_lr()


@pytest.mark.parametrize("key", list(PLATEAU))
def test_reduce_on_plateau_matches_pytorch(key):
    torch = _torch()
    results = []
    for lib in (ember, torch):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **PLATEAU[key])
        seq = []
        for metric in METRICS:
            opt.step()
            sched.step(metric)
            seq.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter,
                        sched.best))
        results.append(seq)
    assert results[0] == results[1]


@pytest.mark.parametrize("key", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                                 "ExponentialLR", "PolynomialLR", "CosineAnnealingLR"])
def test_chainable_form_agrees_with_closed_form(key):
    """The recursive rates equal the closed formula (what ``step(epoch)`` uses)."""
    rows, sched = lr_sequence(ember, key)
    for epoch, row in enumerate(rows):
        sched.last_epoch = epoch
        closed = sched._get_closed_form_lr()
        np.testing.assert_allclose(row[:2], closed, rtol=1e-12, atol=1e-15)


def test_known_values():
    rows, _ = lr_sequence(ember, "StepLR", epochs=15)
    assert [r[0] for r in rows[::7]] == [0.1, 0.05, 0.025]
    rows, _ = lr_sequence(ember, "CosineAnnealingLR", epochs=30)
    assert rows[0][0] == 0.1 and abs(rows[30][0] - 0.001) < 1e-15
    assert abs(rows[15][0] - (0.001 + 0.099 / 2)) < 1e-14
    rows, _ = lr_sequence(ember, "OneCycleLR-cos")
    assert abs(rows[0][0] - 0.5 / 25) < 1e-15
    assert abs(max(r[0] for r in rows) - 0.5) < 1e-3  # the peak falls between two steps
    assert abs(rows[-1][0] - 0.5 / 25 / 1e4) < 1e-15
    assert rows[0][2] == 0.95 and abs(min(r[2] for r in rows) - 0.85) < 1e-3
    rows, _ = lr_sequence(ember, "CyclicLR-triangular", epochs=10)
    expected = [0.01 + 0.015 * i for i in range(7)] + [0.1 - 0.0225 * i for i in range(1, 5)]
    np.testing.assert_allclose([r[0] for r in rows], expected, rtol=1e-12)


@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_state_dict_resume(key):
    full, _ = lr_sequence(ember, key)
    opt = make_optimizer(ember)
    sched = SCHEDULERS[key](ember_sched, opt)
    for _ in range(30):
        opt.step()
        sched.step()
    opt_state, sched_state = opt.state_dict(), sched.state_dict()

    fresh_opt = make_optimizer(ember)
    fresh = SCHEDULERS[key](ember_sched, fresh_opt)
    fresh.load_state_dict(sched_state)
    fresh_opt.load_state_dict(opt_state)
    rows = []
    for _ in range(EPOCHS - 30):
        fresh_opt.step()
        fresh.step()
        rows.append([g["lr"] for g in fresh_opt.param_groups])
    assert rows == [r[:2] for r in full[31:]]


def test_state_dict_contents():
    opt = make_optimizer(ember)
    sched = ember_sched.LambdaLR(opt, [scale, Lambda(0.3)])
    state = sched.state_dict()
    assert "optimizer" not in state
    assert state["lr_lambdas"] == [None, {"rate": 0.3}]
    assert state["base_lrs"] == [0.1, 0.2] and state["last_epoch"] == 0
    other = Lambda(0.0)
    fresh = ember_sched.LambdaLR(make_optimizer(ember), [scale, other])
    fresh.load_state_dict(state)
    assert other.rate == 0.3


def test_warns_when_stepped_before_optimizer():
    opt = make_optimizer(ember)
    sched = ember_sched.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`"):
        sched.step()
    opt = make_optimizer(ember)
    sched = ember_sched.StepLR(opt, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
        sched.step()


def test_warns_when_optimizer_step_was_replaced():
    opt = make_optimizer(ember)
    sched = ember_sched.ExponentialLR(opt, gamma=0.5)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="Seems like `optimizer.step\\(\\)` has been overridden"):
        sched.step()


def test_warning_texts_match_pytorch():
    torch = _torch()
    texts = []
    for lib in (ember, torch):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sched.step()
            sched.get_lr()
            sched.step(5)
        texts.append([str(w.message) for w in caught])
    assert texts[0] == texts[1]


def test_scheduler_wraps_step_once_and_keeps_hooks():
    opt = make_optimizer(ember)
    ember_sched.StepLR(opt, step_size=2)
    first = opt.step
    ember_sched.ExponentialLR(opt, gamma=0.9)
    assert opt.step is first
    calls = []
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(1))
    opt.step()
    assert calls == [1] and opt._opt_called


def test_tensor_learning_rate_is_updated_in_place():
    p = ember.tensor([1.0], requires_grad=True)
    lr = ember.tensor(0.1)
    opt = ember.optim.SGD([p], lr=lr)
    sched = ember_sched.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr
    assert abs(float(lr) - 0.05) < 1e-8
    last = sched.get_last_lr()[0]
    assert isinstance(last, ember.Tensor) and last is not lr


def test_errors():
    opt = make_optimizer(ember)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        ember_sched.StepLR([], step_size=1)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified"):
        ember_sched.StepLR(opt, step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        ember_sched.LambdaLR(opt, [scale])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        ember_sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode sideways is unknown!"):
        ember_sched.ReduceLROnPlateau(opt, mode="sideways")
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        ember_sched.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        ember_sched.OneCycleLR(opt, max_lr=0.1)
    one_cycle = ember_sched.OneCycleLR(make_optimizer(ember), max_lr=0.1, total_steps=2)
    one_cycle.optimizer.step()
    one_cycle.step()
    one_cycle.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        one_cycle.step()
    rmsprop_less = ember.optim.Adagrad([ember.tensor([1.0], requires_grad=True)])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        ember_sched.CyclicLR(rmsprop_less, 0.01, 0.1)
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers"):
        ember_sched.SequentialLR(opt, [ember_sched.StepLR(opt, 2)], milestones=[3])


def test_warm_restarts_fractional_epochs_match_pytorch():
    torch = _torch()
    results = []
    for lib in (ember, torch):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(60):
                opt.step()
                sched.step(i * 0.37)
                seq.append(sched.get_last_lr())
        results.append(seq)
    assert results[0] == results[1]


def test_cosine_matches_closed_form_over_many_periods():
    rows, _ = lr_sequence(ember, "CosineAnnealingLR")
    for epoch, row in enumerate(rows):
        expected = 0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * epoch / 30)) / 2
        assert abs(row[0] - expected) < 1e-12


@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_state_dict_keys_match_pytorch(key):
    torch = _torch()
    keys = []
    for lib in (ember, torch):
        opt = make_optimizer(lib)
        sched = SCHEDULERS[key](lib.optim.lr_scheduler, opt)
        opt.step()
        sched.step()
        keys.append(sorted(sched.state_dict()))
    assert keys[0] == keys[1]
