"""The Optimizer base class: parameter groups, zero_grad, hooks, state_dict, errors."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.optim.optimizer import Optimizer, register_optimizer_step_pre_hook


def params(*values):
    return [ember.tensor(np.asarray(v, dtype=np.float32), requires_grad=True) for v in values]


def with_grads(tensors, *grads):
    for t, g in zip(tensors, grads):
        t.grad = None if g is None else ember.tensor(np.asarray(g, dtype=np.float32))
    return tensors


# ----------------------------------------------------------------------
# construction and errors


def test_error_messages_match_pytorch():
    p, = params([1.0, 2.0])
    with pytest.raises(ValueError, match="^Invalid learning rate: -0.1$"):
        ember.optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match="^Invalid learning rate: -0.1"):
        ember.optim.Adam([p], lr=ember.tensor(-0.1))
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        ember.optim.Adam([p], lr=ember.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match="^Invalid momentum value: -1$"):
        ember.optim.SGD([p], momentum=-1)
    with pytest.raises(ValueError, match="^Invalid beta parameter at index 1: 1.0$"):
        ember.optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="^betas must be either both floats or both Tensors$"):
        ember.optim.Adam([p], betas=(0, 0.9))
    with pytest.raises(ValueError, match="^Invalid epsilon value: -1e-08$"):
        ember.optim.Adam([p], eps=-1e-8)
    with pytest.raises(ValueError, match="^Invalid weight_decay value: -0.5$"):
        ember.optim.AdamW([p], weight_decay=-0.5)
    with pytest.raises(ValueError, match="^Invalid rho value: 1.5$"):
        ember.optim.Adadelta([p], rho=1.5)
    with pytest.raises(ValueError, match="^Invalid eta values: 0.5, 0.9$"):
        ember.optim.Rprop([p], etas=(0.5, 0.9))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero"):
        ember.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="^Invalid learning rate: 0.0$"):
        ember.optim.SparseAdam([p], lr=0.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        ember.optim.SGD([p], lr=0.1, foo=1)


def test_parameter_list_errors():
    p, q = params([1.0], [2.0])
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        ember.optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        ember.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got "
                                        "ember.FloatTensor"):
        ember.optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        ember.optim.SGD([p, 3], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        ember.optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        ember.optim.SGD([{"params": [p]}, {"params": [p, q]}], lr=0.1)
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate "
                                         "parameters"):
        ember.optim.SGD([p, p], lr=0.1)


def test_required_option():
    from ember.optim.optimizer import required

    class Plain(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, {"lr": lr})

    p, = params([1.0])
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required "
                                         "optimization parameter lr"):
        Plain([p])
    assert Plain([{"params": [p], "lr": 0.5}]).param_groups[0]["lr"] == 0.5


def test_error_messages_equal_pytorchs():
    torch = pytest.importorskip("torch")
    cases = [
        ("SGD", {"lr": -0.1}), ("Adam", {"betas": (0.9, 1.5)}), ("RMSprop", {"alpha": -1.0}),
        ("Adagrad", {"lr_decay": -1.0}), ("NAdam", {"momentum_decay": -1.0}),
        ("Adagrad", {"initial_accumulator_value": -1.0}), ("Rprop", {"etas": (1.5, 2.0)}),
    ]
    for name, options in cases:
        messages = []
        for lib in (ember, torch):
            p = lib.tensor([1.0], requires_grad=True)
            with pytest.raises(ValueError) as info:
                getattr(lib.optim, name)([p], **options)
            messages.append(str(info.value))
        assert messages[0] == messages[1]


# ----------------------------------------------------------------------
# groups, defaults and the step


def test_param_groups_and_defaults():
    p, q, r = params([1.0, 2.0], [3.0], [4.0])
    opt = ember.optim.SGD([{"params": [p]}, {"params": q, "lr": 0.5, "momentum": 0.9}],
                          lr=0.1)
    assert opt.defaults["lr"] == 0.1
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["params"] == [q]
    opt.add_param_group({"params": [r], "weight_decay": 0.1})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["weight_decay"] == 0.1
    with_grads([p, q, r], [1.0, 1.0], [1.0], [1.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 1.9])
    np.testing.assert_allclose(q.detach().numpy(), [2.5])
    np.testing.assert_allclose(r.detach().numpy(), [3.86], rtol=1e-6)


def test_params_without_grad_are_skipped():
    p, q = params([1.0], [2.0])
    opt = ember.optim.Adam([p, q], lr=0.1)
    with_grads([p, q], [1.0], None)
    opt.step()
    assert q.detach().numpy()[0] == 2.0
    assert q not in opt.state and len(opt.state[p]) == 3
    sgd = ember.optim.SGD([p, q], lr=0.1)
    sgd.step()
    assert sgd.state_dict()["state"] == {}


def test_zero_grad():
    p, q = params([1.0], [2.0])
    opt = ember.optim.SGD([p, q], lr=0.1)
    with_grads([p, q], [1.0], [2.0])
    grad = q.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.numpy()[0] == 0 and grad.numpy()[0] == 0
    opt.zero_grad()
    assert p.grad is None and q.grad is None


def test_step_bumps_version_so_autograd_sees_the_write():
    p, = params([1.0, 2.0])
    y = (p * p).sum()
    opt = ember.optim.SGD([p], lr=0.1)
    with_grads([p], [1.0, 1.0])
    version = p._version.value
    opt.step()
    assert p._version.value == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_step_runs_without_recording_and_closure_with():
    p, = params([1.0, -1.0])
    opt = ember.optim.SGD([p], lr=0.5)
    seen = []

    def closure():
        opt.zero_grad()
        seen.append(ember.is_grad_enabled())
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and float(loss) == 2.0
    np.testing.assert_allclose(p.detach().numpy(), [0.0, 0.0])
    assert p.grad_fn is None and p.is_leaf


def test_tensor_learning_rate():
    p, = params([1.0])
    lr = ember.tensor(0.5)
    opt = ember.optim.Adam([p], lr=lr)
    with_grads([p], [1.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.5], rtol=1e-6)
    lr.mul_(0.5)
    with_grads([p], [1.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.25], rtol=1e-5)


def test_step_state_is_a_float_tensor_like_pytorch():
    p, = params([1.0])
    opt = ember.optim.Adam([p])
    with_grads([p], [1.0])
    opt.step()
    opt.step()
    step = opt.state[p]["step"]
    assert isinstance(step, ember.Tensor) and step.dim() == 0
    assert step.dtype == ember.float32 and float(step) == 2.0


def test_sparse_gradients_plug_in_one_place():
    class SparseGrad(ember.Tensor):
        is_sparse = True

    from ember._core.tensor import _make

    for name, kind in [("SGD", NotImplementedError), ("Adagrad", NotImplementedError),
                       ("SparseAdam", NotImplementedError), ("Adam", RuntimeError)]:
        p, = params([1.0, 2.0])
        opt = getattr(ember.optim, name)([p], lr=0.1)
        p._grad = _make(np.ones(2, np.float32), cls=SparseGrad)
        with pytest.raises(kind, match=name):
            opt.step()
    p, = params([1.0])
    opt = ember.optim.SparseAdam([p])
    with_grads([p], [1.0])
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please "
                                           "consider Adam instead"):
        opt.step()


def test_differentiable_is_refused():
    p, = params([1.0])
    opt = ember.optim.SGD([p], lr=0.1, differentiable=True)
    with_grads([p], [1.0])
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        opt.step()


def test_named_parameters():
    p, q = params([1.0], [2.0])
    opt = ember.optim.SGD([("a", p), ("b", q)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": params([3.0])})


# ----------------------------------------------------------------------
# hooks


def test_step_hooks():
    p, = params([1.0])
    opt = ember.optim.SGD([p], lr=0.1)
    with_grads([p], [1.0])
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", args)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", args)))
    glob = register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append(("global",)))
    opt.step()
    assert calls == [("global",), ("pre", ()), ("post", ())]
    pre.remove()
    post.remove()
    glob.remove()
    opt.step()
    assert len(calls) == 3


def test_pre_hook_can_replace_arguments():
    p, = params([1.0])
    opt = ember.optim.SGD([p], lr=0.1)
    with_grads([p], [1.0])
    opt.register_step_pre_hook(lambda o, args, kwargs: ((), {"closure": lambda: 7.0}))
    assert opt.step() == 7.0
    opt.register_step_pre_hook(lambda o, args, kwargs: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_hooks_run_for_user_subclasses_overriding_step():
    class Halve(Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})

        @ember.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.mul_(group["lr"])

    p, = params([4.0])
    opt = Halve([p])
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    opt.step()
    assert calls == [1] and p.detach().numpy()[0] == 2.0


def test_state_dict_hooks():
    p, = params([1.0])
    opt = ember.optim.SGD([p], lr=0.1)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: order.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: order.append("load-post"))
    opt.register_state_dict_pre_hook(lambda o: order.append("first"), prepend=True)
    sd = opt.state_dict()
    assert sd["extra"] == 1 and order == ["first", "pre"]
    opt.load_state_dict(sd)
    assert order[-2:] == ["load-pre", "load-post"]


# ----------------------------------------------------------------------
# state dict


def test_state_dict_layout():
    p, q, r = params([1.0, 2.0], [3.0], [4.0])
    opt = ember.optim.SGD([{"params": [p, q]}, {"params": [r], "lr": 0.5}], lr=0.1, momentum=0.9)
    with_grads([p, q, r], [1.0, 1.0], None, [1.0])
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0, 2]
    assert list(sd["state"][0]) == ["momentum_buffer"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert sd["state"][0]["momentum_buffer"] is opt.state[p]["momentum_buffer"]


def test_state_dict_matches_pytorch_for_adagrad_and_plain_sgd():
    torch = pytest.importorskip("torch")
    for name in ("Adagrad", "SGD"):
        keys = []
        for lib in (ember, torch):
            p = lib.tensor([1.0, 2.0], requires_grad=True)
            q = lib.tensor([3.0], requires_grad=True)
            opt = getattr(lib.optim, name)([p, q], lr=0.1)
            p.grad = lib.tensor([0.5, 0.5])
            opt.step()
            sd = opt.state_dict()
            keys.append({k: sorted(v) for k, v in sd["state"].items()})
        assert keys[0] == keys[1]


def test_load_state_dict_errors():
    p, q = params([1.0], [2.0])
    opt = ember.optim.SGD([p, q], lr=0.1)
    other = ember.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    single = ember.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(single.state_dict())


def test_load_state_dict_casts_state_to_the_parameter_dtype():
    p = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    q = ember.tensor([1.0, 2.0], dtype=ember.float32, requires_grad=True)
    src = ember.optim.Adam([q])
    q.grad = ember.tensor([1.0, 1.0])
    src.step()
    dst = ember.optim.Adam([p])
    dst.load_state_dict(src.state_dict())
    assert dst.state[p]["exp_avg"].dtype == ember.float64
    assert dst.state[p]["step"].dtype == ember.float32
    assert dst.param_groups[0]["params"] == [p]


def test_optimizer_pickles_and_deep_copies():
    p, = params([1.0, 2.0])
    opt = ember.optim.Adam([p], lr=0.1)
    with_grads([p], [1.0, -1.0])
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["lr"] == 0.1
    deep = copy.deepcopy(opt)
    np.testing.assert_array_equal(list(deep.state.values())[0]["exp_avg"].numpy(),
                                  opt.state[p]["exp_avg"].numpy())


def test_repr_matches_pytorch():
    torch = pytest.importorskip("torch")
    texts = []
    for lib in (ember, torch):
        p = lib.tensor([1.0], requires_grad=True)
        texts.append(repr(lib.optim.Adam([{"params": [p]}], lr=0.01, weight_decay=0.1)))
    assert texts[0] == texts[1]


def test_no_reference_cycle_after_step():
    import gc
    import weakref

    gc.disable()
    try:
        p, = params([1.0, 2.0])
        opt = ember.optim.Adam([p], lr=0.1)
        ember.optim.lr_scheduler.StepLR(opt, step_size=1)
        with_grads([p], [1.0, 1.0])
        opt.step()
        ref = weakref.ref(opt)
        del opt
        assert ref() is None
    finally:
        gc.enable()


def test_no_warnings_in_a_plain_loop():
    p, = params([1.0, 2.0])
    opt = ember.optim.AdamW([p], lr=0.1)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            opt.step()
            sched.step()


def _train(name, options, steps):
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((32, 3)).astype(np.float32))
    y = x @ ember.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = ember.nn.Linear(3, 1)
    opt = getattr(ember.optim, name)(model.parameters(), **options)

    def closure():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).sum() / 32
        loss.backward()
        return loss

    first = float(closure())
    for _ in range(steps):
        opt.step(closure)
    return first, float(closure())


@pytest.mark.parametrize("name,options,steps", [
    ("SGD", {"lr": 0.1, "momentum": 0.9}, 100), ("Adam", {"lr": 0.05}, 100),
    ("RMSprop", {"lr": 0.01}, 300), ("LBFGS", {}, 3)])
def test_trains_a_module(name, options, steps):
    """The optimizers work on a Module's Parameters, in an ordinary training loop."""
    first, last = _train(name, options, steps)
    assert last < 1e-3 * first
