"""nn.DataParallel: without CUDA it runs the module as it is (as PyTorch does)."""

import pytest

import ember
from ember import nn


@pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is present")
def test_without_cuda_the_module_runs_unchanged_and_trains():
    ember.manual_seed(0)
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner)
    assert model.device_ids == [] and model.module is inner
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    x = ember.randn(4, 3)
    out = model(x)
    assert ember.equal(out, inner(x))
    out.sum().backward()
    assert ember.allclose(inner.weight.grad, x.sum(0).expand(2, 3))


def test_keyword_inputs_and_the_functional_form():
    class Scale(nn.Module):
        def forward(self, x, *, factor):
            return x * factor

    assert nn.DataParallel(Scale())(ember.ones(2), factor=3.0).tolist() == [3.0, 3.0]
    out = nn.parallel.data_parallel(Scale(), ember.ones(2), module_kwargs={"factor": 2.0})
    assert out.tolist() == [2.0, 2.0]


@pytest.mark.cuda
def test_with_one_gpu_inputs_move_to_it_and_parameters_must_be_there():
    model = nn.DataParallel(nn.Linear(3, 2), device_ids=[0])
    with pytest.raises(RuntimeError, match="parameters and buffers on device cuda:0"):
        model(ember.ones(1, 3))
    model.module.cuda()
    assert model(ember.ones(1, 3)).device == ember.device("cuda:0")
