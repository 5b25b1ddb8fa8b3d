"""Hooks on tensors and on graph nodes, their order, and the graph's public structure."""

import numpy as np
import pytest

import ember
from ember import autograd
from ember.autograd.graph import Node

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def leaf(values):
    return ember.tensor(values, requires_grad=True)


# --- tensor hooks ---------------------------------------------------------------------------


def test_leaf_hook_sees_and_replaces_the_gradient():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))  # returns None: gradient unchanged
    x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [30.0, 30.0]


def test_hook_handle_removes_the_hook():
    x = leaf([1.0])
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()  # a second remove does nothing
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]
    with x.register_hook(lambda g: g * 0):  # a handle is also a context manager
        pass
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_non_leaf_hook_replaces_what_flows_on():
    x = leaf([1.0, 2.0])
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g * 2)
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]  # 2y
    assert x.grad.tolist() == [36.0, 72.0]  # (2y * 2) * 3


def test_hooks_apply_to_captured_gradients():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: g * 10)
    assert autograd.grad((x * 2).sum(), x)[0].tolist() == [20.0, 20.0]
    assert x.grad is None
    w = x * 3
    w.register_hook(lambda g: g * 2)
    assert autograd.grad((w * 1).sum(), w, retain_graph=True)[0].tolist() == [2.0, 2.0]
    # capturing w's gradient did not run (or free) w's own node
    assert autograd.grad((w * 1).sum(), x)[0].tolist() == [60.0, 60.0]


def test_hook_registration_errors():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        ember.ones(1).register_hook(lambda g: g)
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook():
    x = leaf([1.0, 2.0])
    seen = []

    def hook(t):
        assert t is x
        seen.append(t.grad.tolist())

    handle = x.register_post_accumulate_grad_hook(hook)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]  # after each accumulation
    autograd.grad((x * 2).sum(), x)  # grad() accumulates nothing: no call
    assert len(seen) == 2
    handle.remove()
    (x * 2).sum().backward()
    assert len(seen) == 2


def test_retain_grad_sees_the_gradient_after_all_hooks():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.register_hook(lambda g: g + 1)  # registered after retain_grad, still runs before it
    (y * 2).sum().backward()
    assert y.grad.tolist() == [21.0, 21.0]
    assert x.grad.tolist() == [63.0, 63.0]


# --- node hooks -----------------------------------------------------------------------------


def test_node_hook_gets_grad_inputs_and_outputs():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = a * b
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append(
        ([g.tolist() for g in gi], [g.tolist() for g in go])))
    y.sum().backward()
    assert calls == [([[3.0, 4.0], [1.0, 2.0]], [[1.0, 1.0]])]


def test_node_hook_replaces_grad_inputs():
    a = leaf([1.0, 2.0])
    y = a * 2
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7, gi[1]))
    y.sum().backward()
    assert a.grad.tolist() == [7.0, 7.0]


def test_node_prehook_replaces_grad_outputs():
    a = leaf([1.0, 2.0])
    y = a * 2
    seen = []

    def prehook(go):
        seen.append([g.tolist() for g in go])
        return (go[0] * 5,)

    handle = y.grad_fn.register_prehook(prehook)
    y.sum().backward(retain_graph=True)
    assert seen == [[[1.0, 1.0]]] and a.grad.tolist() == [10.0, 10.0]
    handle.remove()
    a.grad = None
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_hook_order():
    log = []
    x = leaf([1.0, 2.0])
    y = x * 3
    z = y * y
    y.register_hook(lambda g: log.append(("y-hook-1", g.tolist())))
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.register_hook(lambda g: log.append(("y-hook-3", g.tolist())))
    x.register_hook(lambda g: log.append(("x-hook", g.tolist())) or g + 1)
    x.register_post_accumulate_grad_hook(lambda t: log.append(("x-post", t.grad.tolist())))
    z.grad_fn.register_prehook(lambda go: log.append(("z-prehook", [g.tolist() for g in go])))
    z.grad_fn.register_hook(lambda gi, go: log.append(("z-hook", [g.tolist() for g in gi])))
    z.sum().backward()
    # The same sequence and values as PyTorch gives.
    assert log == [
        ("z-prehook", [[1.0, 1.0]]),
        ("z-hook", [[3.0, 6.0], [3.0, 6.0]]),
        ("y-hook-1", [6.0, 12.0]),
        ("y-hook-3", [60.0, 120.0]),
        ("x-hook", [180.0, 360.0]),
        ("x-post", [181.0, 361.0]),
    ]
    assert y.grad.tolist() == [60.0, 120.0]
    assert x.grad.tolist() == [181.0, 361.0]


# --- graph structure ------------------------------------------------------------------------


def test_next_functions_and_accumulate_grad():
    x = leaf([1.0, 2.0])
    c = ember.ones(2)
    y = x * c
    assert y.grad_fn.name() == "MulBackward0"
    (acc, nr), (none, none_nr) = y.grad_fn.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is x and nr == 0
    assert none is None and none_nr == 0
    assert acc.next_functions == ()
    z = y * y
    assert z.grad_fn.next_functions == ((y.grad_fn, 0), (y.grad_fn, 0))
    # the same AccumulateGrad node serves every use of x while it is alive
    assert (x * 2).grad_fn.next_functions[0][0] is acc
    assert x.grad_fn is None


def test_graph_node_class():
    x = leaf([1.0])
    y = x * 2
    assert isinstance(y.grad_fn, Node)
    assert isinstance(y.grad_fn.next_functions[0][0], Node)
    assert y.grad_fn.metadata == {}
    y.grad_fn.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}


def test_output_nr_of_multi_output_nodes():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    parts = (x * 1).split(2) if hasattr(ember.Tensor, "split") else None
    if parts is None:
        pytest.skip("split is not available")
    assert [p.output_nr for p in parts] == [0, 1]
    assert parts[0].grad_fn is parts[1].grad_fn


# --- PyTorch parity -------------------------------------------------------------------------


@needs_torch
def test_hook_values_match_torch():
    x_np = np.array([0.5, -1.0, 2.0])
    results = []
    for lib in (ember, torch):
        x = lib.tensor(x_np, requires_grad=True)
        h = x * x
        h.register_hook(lambda g: g * 3)
        y = h * x
        y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, gi[1]))
        y.sum().backward()
        results.append(x.grad.numpy().copy())
    np.testing.assert_allclose(results[0], results[1])
