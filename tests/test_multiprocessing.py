"""ember.multiprocessing: tensors travel as shared memory; spawn reports failures."""

import sys

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember import nn

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="memfd sharing is Linux's")


def _add_one(tensor):
    tensor.add_(1)


def _fill_from_queue(queue, done):
    tensor = queue.get()
    tensor.fill_(7.0)
    done.put(tensor.is_shared())


def _train_shared(rank, model, steps):
    ember.manual_seed(rank)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = ember.randn(8, 3)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def _raise_on_one(rank):
    if rank == 1:
        raise ValueError("rank one fails")


def _exit_three(rank):
    raise SystemExit(3)


def test_the_standard_module_is_there():
    import multiprocessing

    for name in ("Process", "Queue", "get_context", "set_start_method", "cpu_count"):
        assert getattr(mp, name) is getattr(multiprocessing, name)
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    with pytest.raises(NotImplementedError, match="file_system"):
        mp.set_sharing_strategy("file_system")


def test_a_spawned_process_writes_into_the_parents_tensor():
    t = ember.zeros(5)
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=_add_one, args=(t,))  # pickled: moved to shared memory first
    p.start()
    p.join()
    assert p.exitcode == 0
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), np.ones(5))


def test_a_view_sent_through_a_queue_is_the_same_memory():
    base = ember.zeros(4, 3).share_memory_()
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_fill_from_queue, args=(queue, done))
    p.start()
    queue.put(base[:, 1])  # a strided view, two rows down the map
    assert done.get(timeout=60) is True
    p.join()
    expected = np.zeros((4, 3), np.float32)
    expected[:, 1] = 7.0
    np.testing.assert_array_equal(base.numpy(), expected)


def test_hogwild_with_spawn_trains_the_shared_model():
    ember.manual_seed(0)
    model = nn.Linear(3, 1).share_memory()
    before = model.weight.detach().clone()
    mp.spawn(_train_shared, args=(model, 20), nprocs=2)
    # both processes stepped the parent's parameters; the target is y = x1 + x2 + x3
    after = model.weight.detach()
    assert not np.allclose(after.numpy(), before.numpy())
    x = ember.randn(64, 3)
    fitted = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean().item()
    assert fitted < ((x @ before.T - x.sum(1, keepdim=True)) ** 2).mean().item()


def test_a_non_leaf_that_requires_grad_is_refused():
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        mp.reductions.reduce_tensor(x)


def test_parameters_arrive_as_parameters():
    import pickle

    from multiprocessing.reduction import ForkingPickler

    p = nn.Parameter(ember.ones(3))
    rebuild, args = mp.reductions.reduce_tensor(p)
    assert rebuild.__name__ == "_rebuild_shared" and args[0] is nn.Parameter
    assert ForkingPickler.dumps(p)  # registered: the pickler takes it
    assert pickle.dumps(p)  # plain pickling is unchanged


def test_spawn_reports_an_exception_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException, match="rank one fails") as info:
        mp.start_processes(_raise_on_one, nprocs=2, start_method="fork")
    assert info.value.error_index == 1


def test_spawn_reports_an_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="exit code 3") as info:
        mp.start_processes(_exit_three, nprocs=1, start_method="fork")
    assert info.value.exit_code == 3


def test_start_processes_without_join_returns_a_context():
    context = mp.start_processes(_add_one_rank, args=(), nprocs=2, join=False,
                                 start_method="fork")
    assert len(context.pids()) == 2
    while not context.join():
        pass


def _add_one_rank(rank):
    return rank + 1
