"""Parity with PyTorch for convolution, pooling, padding and resampling.

Layers: PyTorch's state_dict is loaded into ours, then outputs, input gradients and
parameter gradients are compared in float32 (rtol 1e-4).  Functions (interpolate in every
mode, grid_sample, affine_grid, fold/unfold, ...): outputs and gradients of every
differentiable input.  Errors: the same exception type (and, for the ones listed, the
same message).  Skipped when PyTorch is not installed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")

RTOL, ATOL = 1e-4, 1e-5


def _rng(name: str):
    return np.random.default_rng(sum(map(ord, name)))


def _to_numpy(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _close(ours, theirs, what):
    np.testing.assert_allclose(_to_numpy(ours), _to_numpy(theirs), rtol=RTOL, atol=ATOL,
                               err_msg=what)


# ----------------------------------------------------------------------
# layers

LAYERS = [
    ("Conv1d", lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=1), (2, 4, 9), {}),
    ("Conv1d_same_dilated", lambda nn: nn.Conv1d(4, 6, 4, padding="same", dilation=2),
     (2, 4, 9), {}),
    ("Conv2d", lambda nn: nn.Conv2d(3, 8, 3), (2, 3, 7, 6), {}),
    ("Conv2d_grouped", lambda nn: nn.Conv2d(4, 8, (3, 2), stride=(2, 1), padding=(1, 0),
                                            dilation=(1, 2), groups=2), (2, 4, 7, 6), {}),
    ("Conv2d_depthwise", lambda nn: nn.Conv2d(4, 8, 3, padding=1, groups=4, bias=False),
     (2, 4, 5, 5), {}),
    ("Conv2d_reflect", lambda nn: nn.Conv2d(3, 4, 3, padding=2, padding_mode="reflect"),
     (1, 3, 5, 6), {}),
    ("Conv2d_replicate", lambda nn: nn.Conv2d(3, 4, 3, padding=(1, 2),
                                              padding_mode="replicate"), (1, 3, 5, 6), {}),
    ("Conv2d_circular", lambda nn: nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"),
     (1, 3, 5, 6), {}),
    ("Conv2d_same_even", lambda nn: nn.Conv2d(3, 4, (2, 4), padding="same"), (1, 3, 5, 6), {}),
    ("Conv2d_unbatched", lambda nn: nn.Conv2d(3, 4, 3), (3, 5, 6), {}),
    ("Conv3d", lambda nn: nn.Conv3d(2, 4, 2, stride=(1, 2, 1), padding=1), (1, 2, 4, 5, 4), {}),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1,
                                                      output_padding=1), (2, 4, 5), {}),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2,
                                                      dilation=2), (2, 4, 4, 5), {}),
    ("ConvTranspose2d_output_size", lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2),
     (1, 4, 5, 5), {"output_size": (12, 11)}),
    ("ConvTranspose3d", lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1),
     (1, 2, 3, 3, 2), {}),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(3, 2, 1), (2, 3, 9), {}),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), (2, 3, 6, 6), {}),
    ("MaxPool2d_ceil_dilated", lambda nn: nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True),
     (2, 3, 9, 8), {}),
    ("MaxPool3d", lambda nn: nn.MaxPool3d(2, 1), (1, 2, 4, 4, 3), {}),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2, 1, ceil_mode=True), (2, 3, 8), {}),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
     (2, 3, 7, 6), {}),
    ("AvgPool2d_divisor", lambda nn: nn.AvgPool2d(2, divisor_override=3), (2, 3, 6, 6), {}),
    ("AvgPool3d", lambda nn: nn.AvgPool3d(2, padding=1), (1, 2, 4, 4, 3), {}),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(4), (2, 3, 9), {}),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((3, None)), (2, 3, 7, 5), {}),
    ("AdaptiveAvgPool2d_global", lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 7, 5), {}),
    ("AdaptiveAvgPool3d", lambda nn: nn.AdaptiveAvgPool3d((2, 3, 2)), (1, 2, 5, 4, 3), {}),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(4), (2, 3, 9), {}),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((3, 4)), (2, 3, 7, 5), {}),
    ("AdaptiveMaxPool3d", lambda nn: nn.AdaptiveMaxPool3d(2), (1, 2, 5, 4, 3), {}),
    ("LPPool1d", lambda nn: nn.LPPool1d(2, 3, 2), (2, 3, 9), {}),
    ("LPPool2d", lambda nn: nn.LPPool2d(3, 2, ceil_mode=True), (2, 3, 5, 5), {}),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d((1, 2, 0, 3)), (2, 3, 4, 4), {}),
    ("ConstantPad3d", lambda nn: nn.ConstantPad3d(1, 0.5), (1, 2, 2, 3, 2), {}),
    ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((2, 3)), (2, 3, 5), {}),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(2), (2, 3, 4, 5), {}),
    ("ReflectionPad3d", lambda nn: nn.ReflectionPad3d((1, 0, 2, 1, 1, 1)), (1, 2, 3, 4, 3), {}),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((3, 1, 0, 2)), (2, 3, 4, 5), {}),
    ("ReplicationPad3d", lambda nn: nn.ReplicationPad3d(2), (1, 2, 3, 3, 3), {}),
    ("CircularPad1d", lambda nn: nn.CircularPad1d((2, 3)), (2, 3, 5), {}),
    ("CircularPad2d", lambda nn: nn.CircularPad2d((1, 2, 2, 0)), (2, 3, 4, 5), {}),
    ("Upsample_nearest", lambda nn: nn.Upsample(scale_factor=2), (2, 3, 4, 5), {}),
    ("Upsample_bilinear", lambda nn: nn.Upsample(size=(7, 3), mode="bilinear"),
     (2, 3, 4, 5), {}),
    ("Upsample_bicubic_corners", lambda nn: nn.Upsample(scale_factor=1.5, mode="bicubic",
                                                        align_corners=True), (1, 2, 4, 5), {}),
    ("Upsample_trilinear", lambda nn: nn.Upsample(scale_factor=(1.5, 2, 0.5),
                                                  mode="trilinear"), (1, 2, 3, 4, 6), {}),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=(5, 7)), (2, 3, 4, 5), {}),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2),
     (2, 3, 4, 5), {}),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), (2, 8, 3, 4), {}),
    ("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(2), (2, 2, 4, 6), {}),
    ("Unfold", lambda nn: nn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
     (2, 3, 5, 6), {}),
    ("Fold", lambda nn: nn.Fold((4, 5), 2), (2, 12, 12), {}),
]


@pytest.mark.parametrize("name,make,shape,kwargs", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_pytorch(name, make, shape, kwargs):
    rng = _rng(name)
    theirs, ours = make(torch.nn), make(ember.nn)
    assert repr(ours) == repr(theirs)
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    for key, value in state.items():
        assert tuple(ours.state_dict()[key].shape) == tuple(value.shape)
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in state.items()})
    x = rng.standard_normal(shape).astype(np.float32)
    if name.startswith("LPPool"):
        x = np.abs(x) + 0.1
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    ty, ey = theirs(tx, **kwargs), ours(ex, **kwargs)
    assert tuple(ey.shape) == tuple(ty.shape)
    _close(ey, ty, f"{name}: output")
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(g))
    ey.backward(ember.tensor(g))
    _close(ex.grad, tx.grad, f"{name}: input gradient")
    params = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        _close(p.grad, params[pname].grad, f"{name}: gradient of {pname}")


def test_default_init_statistics_match_pytorch():
    """Same distribution (not the same draws): bounds and spread of weight and bias."""
    for make in (lambda nn: nn.Conv2d(16, 32, 3), lambda nn: nn.ConvTranspose2d(16, 32, 3),
                 lambda nn: nn.Conv1d(8, 64, 5, groups=4)):
        theirs, ours = make(torch.nn), make(ember.nn)
        fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)
        bound = 1 / np.sqrt(fan_in)  # weight and bias alike
        for (_, tp), (_, ep) in zip(theirs.named_parameters(), ours.named_parameters()):
            t, e = tp.detach().numpy(), ep.detach().numpy()
            assert np.abs(t).max() <= bound and np.abs(e).max() <= bound
            assert np.abs(e).max() > 0.8 * bound
            if t.size > 1000:  # enough draws for the spread to be close
                assert abs(e.std() - t.std()) < 0.05 * t.std()


# ----------------------------------------------------------------------
# functions


def _interp_cases():
    cases = []
    for mode, shape in (("nearest", (1, 2, 5, 6)), ("nearest-exact", (1, 2, 5, 6)),
                        ("linear", (2, 2, 7)), ("bilinear", (1, 2, 5, 6)),
                        ("bicubic", (1, 2, 5, 6)), ("trilinear", (1, 2, 3, 4, 5)),
                        ("area", (1, 2, 7, 6))):
        corners = (False, True) if mode in ("linear", "bilinear", "bicubic", "trilinear") \
            else (None,)
        for ac in corners:
            for sizing in ({"size": 4}, {"size": 9}, {"scale_factor": 1.7},
                           {"scale_factor": 0.6, "recompute_scale_factor": True}):
                kw = dict(sizing, mode=mode, align_corners=ac)
                cases.append((f"interpolate_{mode}_{ac}_{sizing}",
                              lambda f, x, kw=kw: f.interpolate(x, **kw), [shape]))
    for mode in ("bilinear", "bicubic"):
        for ac in (False, True):
            for size in ((3, 4), (8, 11)):
                kw = dict(size=size, mode=mode, align_corners=ac, antialias=True)
                cases.append((f"interpolate_{mode}_antialias_{ac}_{size}",
                              lambda f, x, kw=kw: f.interpolate(x, **kw), [(1, 2, 7, 9)]))
    return cases


def _grid_cases():
    cases = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (False, True):
                kw = dict(mode=mode, padding_mode=pad, align_corners=ac)
                cases.append((f"grid_sample_{mode}_{pad}_{ac}",
                              lambda f, x, g, kw=kw: f.grid_sample(x, g, **kw),
                              [(2, 3, 4, 5), "grid:2,3,4,2"]))
    for mode in ("bilinear", "nearest"):
        kw = dict(mode=mode, padding_mode="reflection", align_corners=False)
        cases.append((f"grid_sample_3d_{mode}", lambda f, x, g, kw=kw: f.grid_sample(x, g, **kw),
                      [(1, 2, 3, 4, 3), "grid:1,2,3,2,3"]))
    return cases


FUNCTIONS = _interp_cases() + _grid_cases() + [
    ("affine_grid", lambda f, t: f.affine_grid(t, (2, 3, 4, 5), align_corners=False),
     [(2, 2, 3)]),
    ("affine_grid_corners_3d", lambda f, t: f.affine_grid(t, (1, 3, 2, 4, 3),
                                                          align_corners=True), [(1, 3, 4)]),
    ("max_pool2d_with_indices", lambda f, x: f.max_pool2d(x, 3, 2, 1, return_indices=True)[0],
     [(2, 3, 7, 7)]),
    ("max_unpool1d", lambda f, x: f.max_unpool1d(*f.max_pool1d(x, 2, return_indices=True), 2),
     [(2, 3, 8)]),
    ("max_unpool3d", lambda f, x: f.max_unpool3d(*f.max_pool3d(x, 2, return_indices=True), 2),
     [(1, 2, 4, 4, 4)]),
    ("pad_negative", lambda f, x: f.pad(x, (-1, 2, 1, -1), mode="replicate"), [(2, 3, 4, 5)]),
    ("pad_circular_3d", lambda f, x: f.pad(x, (1, 2, 0, 1, 2, 1), mode="circular"),
     [(1, 2, 3, 4, 3)]),
    ("cosine_similarity", lambda f, a, b: f.cosine_similarity(a, b, dim=-1), [(3, 4), (4,)]),
    ("pdist", lambda f, x: f.pdist(x), [(5, 3)]),
    ("pdist_p1", lambda f, x: f.pdist(x, p=1), [(4, 3)]),
    ("conv_transpose2d_functional",
     lambda f, x, w: f.conv_transpose2d(x, w, stride=(2, 1), padding=(0, 1),
                                        output_padding=(1, 0), dilation=(1, 2)),
     [(2, 3, 4, 4), (3, 2, 3, 2)]),
]


@pytest.mark.parametrize("name,fn,shapes", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_function_matches_pytorch(name, fn, shapes):
    rng = _rng(name)
    arrays = []
    for s in shapes:
        if isinstance(s, str):      # a sampling grid, partly outside [-1, 1]
            shape = tuple(int(v) for v in s.split(":")[1].split(","))
            arrays.append(rng.uniform(-1.2, 1.2, shape).astype(np.float32))
        else:
            arrays.append(rng.standard_normal(s).astype(np.float32))
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    ein = [ember.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ty, ey = fn(torch.nn.functional, *tin), fn(ember.nn.functional, *ein)
    assert tuple(ey.shape) == tuple(ty.shape)
    _close(ey, ty, f"{name}: output")
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(g))
    ey.backward(ember.tensor(g))
    for i, (t, e) in enumerate(zip(tin, ein)):
        if t.grad is None:
            continue
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-3, atol=1e-4,
                                   err_msg=f"{name}: gradient of input {i}")


def test_one_hot_and_indices_match():
    idx = np.array([[0, 3], [2, 1]])
    assert np.array_equal(ember.nn.functional.one_hot(ember.tensor(idx)).numpy(),
                          torch.nn.functional.one_hot(torch.tensor(idx)).numpy())
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 7)).astype(np.float32)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)):
        _, ti = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        _, ei = ember.nn.functional.max_pool2d(ember.tensor(x), return_indices=True, **kw)
        assert np.array_equal(ei.numpy(), ti.numpy())
    _, ti = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), (3, 4), True)
    _, ei = ember.nn.functional.adaptive_max_pool2d(ember.tensor(x), (3, 4), True)
    assert np.array_equal(ei.numpy(), ti.numpy())


# ----------------------------------------------------------------------
# errors

ERRORS = [
    # (name, call(lib), compare the message too)
    ("conv_channels", lambda lib: lib.nn.Conv2d(3, 8, 3)(lib.randn(1, 1, 5, 5)), True),
    ("conv_rank", lambda lib: lib.nn.Conv2d(3, 8, 3)(lib.randn(5, 5)), True),
    ("conv_kernel_too_big", lambda lib: lib.nn.functional.conv2d(lib.randn(1, 1, 5, 5),
                                                                 lib.randn(8, 1, 7, 7)), True),
    ("conv_groups", lambda lib: lib.nn.functional.conv2d(lib.randn(1, 4, 5, 5),
                                                         lib.randn(6, 2, 3, 3), groups=4), True),
    ("conv_bias", lambda lib: lib.nn.functional.conv2d(
        lib.randn(1, 4, 5, 5), lib.randn(6, 2, 3, 3), lib.randn(5), groups=2), True),
    ("conv_bias_dtype", lambda lib: lib.nn.functional.conv2d(
        lib.randn(1, 4, 5, 5), lib.randn(4, 4, 3, 3), lib.randn(4, dtype=lib.float64)), True),
    ("conv_same_strided", lambda lib: lib.nn.Conv2d(1, 8, 3, stride=2, padding="same"), True),
    ("conv_groups_module", lambda lib: lib.nn.Conv2d(3, 8, 3, groups=2), True),
    ("conv_transpose_channels", lambda lib: lib.nn.functional.conv_transpose2d(
        lib.randn(1, 4, 5, 5), lib.randn(6, 4, 3, 3)), True),
    ("conv_transpose_output_padding", lambda lib: lib.nn.functional.conv_transpose2d(
        lib.randn(1, 4, 5, 5), lib.randn(4, 2, 3, 3), output_padding=1), True),
    ("conv_transpose_mode", lambda lib: lib.nn.ConvTranspose2d(4, 2, 3,
                                                               padding_mode="reflect"), True),
    ("max_pool_pad", lambda lib: lib.nn.functional.max_pool2d(lib.randn(1, 2, 5, 5), 3,
                                                              padding=2), True),
    ("max_pool_too_small", lambda lib: lib.nn.functional.max_pool2d(lib.randn(1, 2, 5, 5), 7),
     True),
    ("avg_pool_divisor", lambda lib: lib.nn.functional.avg_pool2d(
        lib.randn(1, 2, 5, 5), 2, divisor_override=0), True),
    ("adaptive_output_size", lambda lib: lib.nn.functional.adaptive_avg_pool2d(
        lib.randn(1, 2, 5, 5), (3, 4, 5)), True),
    ("unpool_output_size", lambda lib: lib.nn.functional.max_unpool2d(
        lib.randn(1, 2, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.int64), 2,
        output_size=(9, 9)), True),
    ("pad_odd", lambda lib: lib.nn.functional.pad(lib.randn(2, 3), (1, 2, 3)), True),
    ("pad_reflect_size", lambda lib: lib.nn.functional.pad(lib.randn(2, 5, 5), (5, 2, 0, 0),
                                                           mode="reflect"), True),
    ("pad_mode_dims", lambda lib: lib.nn.functional.pad(lib.randn(1, 2, 5, 5), (1, 2),
                                                        mode="reflect"), True),
    ("pad_circular_wrap", lambda lib: lib.nn.functional.pad(lib.randn(2, 5, 5), (6, 2, 0, 0),
                                                            mode="circular"), True),
    ("interpolate_mode_rank", lambda lib: lib.nn.functional.interpolate(
        lib.randn(1, 2, 5, 5), size=3, mode="linear"), True),
    ("interpolate_both", lambda lib: lib.nn.functional.interpolate(
        lib.randn(1, 2, 5, 5), size=3, scale_factor=2), True),
    ("grid_sample_batch", lambda lib: lib.nn.functional.grid_sample(
        lib.randn(2, 3, 5, 6), lib.rand(3, 4, 7, 2), align_corners=False), True),
    ("affine_grid_theta", lambda lib: lib.nn.functional.affine_grid(
        lib.randn(2, 3, 3), (2, 3, 5, 6), align_corners=False), False),
    ("pixel_shuffle", lambda lib: lib.nn.functional.pixel_shuffle(lib.randn(1, 3, 2, 2), 2),
     True),
    ("one_hot_dtype", lambda lib: lib.nn.functional.one_hot(lib.tensor([1.0])), True),
]


@pytest.mark.parametrize("name,call,same_message", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_pytorch(name, call, same_message):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(ember)
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
    if same_message:
        assert str(ours.value) == str(theirs.value)
