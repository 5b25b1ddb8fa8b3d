"""Device parsing, CUDA availability, and the errors when CUDA is missing."""

import pytest

import ember


def test_device_parsing():
    d = ember.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1)
    assert str(d) == "cuda:1" and repr(d) == "device(type='cuda', index=1)"
    assert ember.device("cpu").type == "cpu" and str(ember.device("cpu")) == "cpu"
    assert ember.device("cuda", 0) == ember.device("cuda:0")
    assert ember.device(ember.device("cpu")) is ember.device("cpu")
    assert ember.device(2) == ember.device("cuda:2")
    assert hash(ember.device("cpu")) == hash(ember.device("cpu"))


def _device_comparisons(lib):
    cpu, cuda0 = lib.device("cpu"), lib.device("cuda", 0)
    return [
        cpu == "cpu", "cpu" == cpu, cpu != "cpu", cpu == lib.device("cpu"),
        cpu == lib.device("cpu", 0), cuda0 == lib.device("cuda:0"),
        lib.device("cuda") == cuda0, cpu == 1, cpu == None,  # noqa: E711
        hash(cpu) == hash("cpu"), hash(cpu) == hash(lib.device("cpu")),
        {cpu: 1}.get("cpu"), "cpu" in [cpu], cpu in [lib.device("cpu")],
        lib.ones(1).device == "cpu", lib.ones(1).device == lib.device("cpu"),
    ]


def test_device_equals_only_devices():
    # A device never equals a string, as in PyTorch (compare .type or str(device)).
    assert _device_comparisons(ember) == [
        False, False, True, True, False, True, False, False, False, False, True, None, False,
        True, False, True,
    ]


def test_device_comparisons_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _device_comparisons(ember) == _device_comparisons(torch)


def test_legacy_constructor_device():
    for dev in ("cpu", "cpu:0", ember.device("cpu"), None):
        t = ember.Tensor([1.0, 2.0], device=dev)
        assert t.device.type == "cpu" and t.tolist() == [1.0, 2.0]
        assert ember.Tensor(2, 3, device=dev).shape == (2, 3)
    for dev in ("cuda:7", "cuda", ember.device("cuda", 1), "meta"):
        kind = ember.device(dev).type
        with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu "
                                               f"but device type: {kind} was passed"):
            ember.Tensor([1.0, 2.0], device=dev)
        with pytest.raises(RuntimeError, match="legacy constructor"):
            ember.Tensor(2, 3, device=dev)
    with pytest.raises(RuntimeError, match="device string: gpu"):
        ember.Tensor([1.0], device="gpu")


def test_legacy_constructor_device_matches_pytorch():
    torch = pytest.importorskip("torch")
    for dev in ("cuda:7", "cuda", "meta"):
        with pytest.raises(RuntimeError) as theirs:
            torch.Tensor([1.0, 2.0], device=dev)
        with pytest.raises(RuntimeError) as ours:
            ember.Tensor([1.0, 2.0], device=dev)
        assert str(ours.value) == str(theirs.value)
    assert torch.Tensor([1.0], device="cpu:0").tolist() == ember.Tensor(
        [1.0], device="cpu:0").tolist()


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
