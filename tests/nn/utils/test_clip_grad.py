"""clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_."""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm


def params_with_grads(*grads):
    out = []
    for g in grads:
        p = nn.Parameter(ember.zeros(len(g)))
        p.grad = ember.tensor(g)
        out.append(p)
    return out


def test_clip_grad_norm_scales_down():
    ps = params_with_grads([3.0, 0.0], [4.0, 12.0])
    total = clip_grad_norm_(ps, max_norm=6.5)
    assert total.item() == pytest.approx(13.0)
    coef = 6.5 / (13.0 + 1e-6)
    assert ps[0].grad.tolist() == pytest.approx([3.0 * coef, 0.0])
    assert ps[1].grad.tolist() == pytest.approx([4.0 * coef, 12.0 * coef])
    assert math.sqrt(sum(x * x for p in ps for x in p.grad.tolist())) == pytest.approx(6.5)


def test_clip_grad_norm_leaves_small_grads():
    ps = params_with_grads([0.3, 0.4])
    total = clip_grad_norm_(ps, max_norm=1.0)
    assert total.item() == pytest.approx(0.5)
    assert ps[0].grad.tolist() == pytest.approx([0.3, 0.4])


def test_norm_types_and_generators():
    ps = params_with_grads([3.0, -4.0], [1.0])
    assert clip_grad_norm_(iter(ps), 100.0, norm_type=1).item() == pytest.approx(8.0)
    assert clip_grad_norm_(ps, 100.0, norm_type="inf").item() == pytest.approx(4.0)
    assert clip_grad_norm_(ps, 100.0, norm_type=3).item() == pytest.approx(
        (27 + 64 + 1) ** (1 / 3))
    total = clip_grad_norm_(ps[0], 2.0, norm_type=math.inf)  # a single tensor
    assert total.item() == pytest.approx(4.0)
    assert ps[0].grad.tolist() == pytest.approx([1.5, -2.0], rel=1e-5)


def test_no_grads_and_none_grads():
    p = nn.Parameter(ember.ones(2))
    total = clip_grad_norm_([p], 1.0)
    assert total.item() == 0.0 and p.grad is None
    q = params_with_grads([3.0, 4.0])[0]
    assert clip_grad_norm_([p, q], 1.0).item() == pytest.approx(5.0)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_nonfinite():
    ps = params_with_grads([1.0, math.inf, 2.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(ps, 1.0)
    assert math.isinf(total.item())


def test_get_total_norm_and_clip_with_norm():
    grads = [ember.tensor([3.0]), ember.tensor([4.0])]
    total = get_total_norm(grads)
    assert total.item() == pytest.approx(5.0) and total.dtype is ember.float32
    ps = params_with_grads([3.0], [4.0])
    clip_grads_with_norm_(ps, 1.0, total)
    assert ps[1].grad.item() == pytest.approx(0.8, rel=1e-5)


def test_clip_grad_value():
    ps = params_with_grads([-3.0, 0.5, 2.0])
    assert clip_grad_value_(ps, 1.0) is None
    assert ps[0].grad.tolist() == [-1.0, 0.5, 1.0]


def test_matches_torch():
    torch = pytest.importorskip("torch")
    grads = [[0.5, -2.0, 3.0], [1.5], [-0.25, 4.0]]
    for norm_type in (2.0, 1.0, math.inf, 0.5):
        ours = params_with_grads(*grads)
        theirs = [torch.nn.Parameter(torch.zeros(len(g))) for g in grads]
        for p, g in zip(theirs, grads):
            p.grad = torch.tensor(g)
        t1 = clip_grad_norm_(ours, 1.0, norm_type=norm_type)
        t2 = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=norm_type)
        assert t1.item() == pytest.approx(t2.item(), rel=1e-6)
        for p, q in zip(ours, theirs):
            assert p.grad.tolist() == pytest.approx(q.grad.tolist(), rel=1e-5)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_clip_grad_norm_of_matrices_and_views(dtype):
    rng = ember.Generator().manual_seed(0)
    ps = [nn.Parameter(ember.zeros(30, 40, dtype=dtype)), nn.Parameter(ember.zeros(7, dtype=dtype))]
    ps[0].grad = ember.randn(40, 30, generator=rng, dtype=dtype).t()  # not contiguous
    ps[1].grad = ember.randn(7, generator=rng, dtype=dtype)
    grads = [p.grad.clone() for p in ps]
    expected = math.sqrt(sum(float((g * g).sum()) for g in grads))
    versions = [p.grad._version.value for p in ps]
    total = clip_grad_norm_(ps, 1.0)
    assert total.dtype == dtype
    assert total.item() == pytest.approx(expected, rel=1e-5)
    coef = 1.0 / (expected + 1e-6)
    for p, g, v in zip(ps, grads, versions):
        ember.testing.assert_close(p.grad, g * coef, rtol=1e-5, atol=1e-7)
        assert p.grad._version.value == v + 1


def test_large_gradients_are_normed_and_scaled_by_halves_on_two_threads(monkeypatch,
                                                                           on_two_threads):
    # from SPLIT_MIN elements each gradient's sum of squares and scaling run by halves
    # on ember's two threads: the same clipping as one pass (float64 reference)
    from ember.nn.utils import clip_grad

    monkeypatch.setattr(clip_grad, "SPLIT_MIN", 1000)
    parts, run_parts = [], clip_grad._parallel.run_parts
    monkeypatch.setattr(clip_grad._parallel, "run_parts",
                        lambda fn, halves: parts.append(len(halves)) or run_parts(fn, halves))
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(s) for s in ((40, 50), (3001,), (7,))]
    params = []
    for v in values:
        p = ember.nn.Parameter(ember.zeros(*v.shape))
        p.grad = ember.tensor(v.astype(np.float32))
        params.append(p)
    total = ember.nn.utils.clip_grad_norm_(params, 1.5)
    assert parts == [2, 2, 2, 2]    # two gradients large enough, normed and scaled
    norm = np.sqrt(sum((v.astype(np.float32).astype(np.float64) ** 2).sum() for v in values))
    np.testing.assert_allclose(total.item(), norm, rtol=1e-5)
    for p, v in zip(params, values):
        np.testing.assert_allclose(p.grad.numpy(), v * (1.5 / (norm + 1e-6)), rtol=1e-5,
                                   atol=1e-7)
