"""Tensor.share_memory_ / Module.share_memory: in-place updates made by forked processes
are seen by the parent (Hogwild training)."""

import multiprocessing

import numpy as np
import pytest

import ember
from ember import nn

fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                          reason="needs the fork start method")


def _add_one(t):
    t.add_(1)


def _train(model, seed):
    ember.manual_seed(seed)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(32, 3)
    y = x.sum(1, keepdim=True)
    for _ in range(50):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def test_share_memory_keeps_values_and_reports_it():
    t = ember.arange(6.0).reshape(2, 3)
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    data = t._data
    t.share_memory_()  # already shared: nothing moves
    assert t._data is data
    assert ember.ones(0).share_memory_().is_shared()


@fork
def test_a_forked_process_writes_into_the_parents_tensor():
    t = ember.zeros(4).share_memory_()
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_add_one, args=(t,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
        assert w.exitcode == 0
    assert t.tolist() == [2.0, 2.0, 2.0, 2.0]


@fork
def test_hogwild_training_updates_the_shared_model():
    ember.manual_seed(0)
    model = nn.Linear(3, 1).share_memory()
    assert all(p.is_shared() for p in model.parameters())
    before = model.weight.detach().numpy().copy()
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_train, args=(model, seed)) for seed in (1, 2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    after = model.weight.detach().numpy()
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, [[1.0, 1.0, 1.0]], atol=0.1)  # y = x1 + x2 + x3
