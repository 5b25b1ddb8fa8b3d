"""Device parsing, CUDA availability, and the errors when CUDA is missing."""

import pytest

import ember


def test_device_parsing():
    d = ember.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1)
    assert str(d) == "cuda:1" and repr(d) == "device(type='cuda', index=1)"
    assert ember.device("cpu") == "cpu"
    assert ember.device("cuda", 0) == ember.device("cuda:0")
    assert ember.device(ember.device("cpu")) is ember.device("cpu")
    assert ember.device(2) == ember.device("cuda:2")
    assert hash(ember.device("cpu")) == hash(ember.device("cpu"))


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "tpu:0"])
def test_bad_device_strings(bad):
    with pytest.raises(RuntimeError):
        ember.device(bad)


def test_cpu_tensor_device():
    t = ember.ones(2)
    assert t.device == ember.device("cpu")
    assert not t.is_cuda and t.get_device() == -1
    assert t.cpu() is t
    assert t.to("cpu") is t


@pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is present")
def test_cuda_unavailable_errors_name_the_extra():
    assert not ember.cuda.is_available()
    assert ember.cuda.device_count() == 0
    assert not ember.accelerator.is_available()
    assert ember.accelerator.current_accelerator() is None
    with pytest.raises(RuntimeError, match="cuda"):
        ember.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="cuda"):
        ember.ones(2).cuda()


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_round_trip():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x.cuda() * 2).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert x.cuda().device.type == "cuda"
    with pytest.raises(RuntimeError, match="same device"):
        x.cuda() + x
