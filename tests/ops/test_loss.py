"""Focused tests of ember/ops/loss.py and loss_margin.py: errors and warnings as in
PyTorch, numerical stability for extreme inputs, ignore_index, legacy reductions, CTC
edge cases."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import assert_close


def test_cross_entropy_extreme_logits_are_stable():
    x = ember.tensor([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4], [0.0, 0.0, -1e4]], requires_grad=True)
    t = ember.tensor([1, 2, 0])
    loss = F.cross_entropy(x, t, reduction="none")
    assert_close(loss, np.array([2e4, math.log(2), math.log(2)]), rtol=1e-6)
    loss.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    assert_close(x.grad, np.array([[1, -1, 0], [0, 0.5, -0.5], [-0.5, 0.5, 0]]), atol=1e-6)
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"  # as in PyTorch
    assert F.cross_entropy(x, t, reduction="none").grad_fn.name() == "NllLossBackward0"


def test_cross_entropy_target_errors():
    x = ember.randn(3, 4)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, ember.tensor([0, 1, 5]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.nll_loss(x, ember.tensor([0, 1, -1]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                       r"batch_size \(2\)."):
        F.cross_entropy(x, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                       "Int"):
        F.nll_loss(x, ember.tensor([0, 1, 2], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.nll_loss(x, ember.zeros(3, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 5\], got \[3, 4\]"):
        F.nll_loss(ember.randn(3, 4, 5), ember.zeros(3, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 "
                       r"classes or no classes but got weight tensor of shape: \[3\]"):
        F.cross_entropy(x, ember.tensor([0, 1, 2]), weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: "
                       "1.5"):
        F.cross_entropy(x, ember.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.cross_entropy(x, ember.tensor([0, 1, 2]), reduction="foo")
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        F.cross_entropy(x, ember.rand(3, 4), ignore_index=1)


@pytest.mark.parametrize("loss_fn", [F.nll_loss, F.cross_entropy])
def test_mean_over_zero_total_weight_matches_pytorch(loss_fn):
    # targets that weigh 0 in all: nan loss; nan gradient on their rows, 0 on ignored rows
    x = ember.randn(3, 4, requires_grad=True)
    loss = loss_fn(x, ember.tensor([0, -100, 2]), weight=ember.zeros(4))
    assert math.isnan(loss.item()) and loss.grad_fn.name() == "NllLossBackward0"
    loss.backward()
    g = x.grad.numpy()
    assert np.isnan(g[0, 0]) and np.isnan(g[2, 2]) and (g[1] == 0).all()
    if loss_fn is F.nll_loss:
        assert (g[0, 1:] == 0).all()
    (again,) = ember.autograd.grad(loss_fn(x, ember.tensor([0, -100, 2]), weight=ember.zeros(4)),
                                   x, create_graph=True)  # the recorded formula agrees
    np.testing.assert_array_equal(np.isnan(again.detach().numpy()), np.isnan(g))


def test_ignore_index_and_uint8_targets():
    x = ember.randn(3, 4, requires_grad=True)
    t = ember.tensor([0, -100, 2])
    loss = F.cross_entropy(x, t, reduction="none")
    assert loss[1].item() == 0.0
    assert_close(F.cross_entropy(x, t), loss.sum() / 2)
    all_ignored = F.cross_entropy(x, ember.tensor([-100, -100, -100]))
    assert math.isnan(all_ignored.item())
    all_ignored.backward()  # a zero gradient, as in PyTorch (not nan)
    assert_close(x.grad, np.zeros((3, 4)))
    x.grad = None
    all_ignored = F.nll_loss(x, ember.tensor([-100, -100, -100]))
    assert math.isnan(all_ignored.item()) and all_ignored.grad_fn.name() == "NllLossBackward0"
    all_ignored.backward()
    assert_close(x.grad, np.zeros((3, 4)))
    x.grad = None
    assert F.cross_entropy(ember.zeros(0, 4), ember.zeros(0, dtype=ember.int64),
                           reduction="sum").item() == 0.0
    u8 = ember.tensor([0, 1, 2], dtype=ember.uint8)
    assert_close(F.nll_loss(x, u8), F.nll_loss(x, u8.long()))
    F.cross_entropy(x, t).backward()
    assert_close(x.grad[1], np.zeros(4))


def test_class_weights_are_not_differentiable_like_pytorch():
    w = ember.ones(4, requires_grad=True)
    x = ember.randn(3, 4, requires_grad=True)
    t = ember.tensor([0, 1, 2])
    with pytest.raises(RuntimeError, match="'nll_loss_forward' is not differentiable with "
                       "respect to argument 'weight'"):
        F.cross_entropy(x, t, weight=w)
    with pytest.raises(RuntimeError, match="'binary_cross_entropy' is not differentiable"):
        F.binary_cross_entropy(ember.rand(3), ember.rand(3), weight=w[:3])
    with pytest.raises(RuntimeError, match="argument 'pos_weight'"):
        F.binary_cross_entropy_with_logits(x, ember.rand(3, 4), pos_weight=w)
    with ember.no_grad():
        F.nll_loss(x, t, weight=w)  # no graph, no error


def test_legacy_size_average_and_reduce():
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, "
                      "please use reduction='sum' instead."):
        s = F.l1_loss(x, y, size_average=False)
    assert_close(s, (x - y).abs().sum())
    with pytest.warns(UserWarning, match="reduction='none'"):
        n = F.smooth_l1_loss(x, y, reduce=False)
    assert n.shape == (3, 4)
    with pytest.warns(UserWarning):
        m = F.nll_loss(x, ember.tensor([0, 1, 2]), size_average=True, reduce=True)
    assert_close(m, F.nll_loss(x, ember.tensor([0, 1, 2])))


def test_binary_cross_entropy_clamps_logs_and_checks_range():
    x = ember.tensor([0.0, 1.0, 0.5], requires_grad=True)
    t = ember.tensor([1.0, 0.0, 1.0])
    loss = F.binary_cross_entropy(x, t, reduction="none")
    assert_close(loss, np.array([100.0, 100.0, math.log(2)]))
    loss.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match=r"Using a target size \(torch.Size\(\[4\]\)\) that is "
                       r"different to the input size \(torch.Size\(\[3\]\)\) is deprecated"):
        F.binary_cross_entropy(ember.rand(3), ember.rand(4))
    with pytest.raises(ValueError, match=r"Target size \(torch.Size\(\[4\]\)\) must be the same "
                       r"as input size \(torch.Size\(\[3\]\)\)"):
        F.binary_cross_entropy_with_logits(ember.rand(3), ember.rand(4))


def test_bce_with_logits_extreme_logits():
    x = ember.tensor([1e4, -1e4, 0.0, 50.0], requires_grad=True)
    t = ember.tensor([0.0, 1.0, 1.0, 1.0])
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert_close(loss, np.array([1e4, 1e4, math.log(2), 0.0]), atol=1e-6)
    loss.sum().backward()
    assert_close(x.grad, np.array([1.0, -1.0, -0.5, 0.0]), atol=1e-6)


def test_size_mismatch_warnings():
    with pytest.warns(UserWarning, match="Using a target size"):
        F.l1_loss(ember.rand(3, 1), ember.rand(3))
    with pytest.raises(RuntimeError), pytest.warns(UserWarning):
        F.l1_loss(ember.rand(3), ember.rand(4))
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.l1_loss(ember.rand(3), ember.rand(3), weight=ember.rand(2))


def test_l1_weight_mean_divides_by_weight_sum():
    x, y, w = ember.rand(3, 4), ember.rand(3, 4), ember.rand(3, 4)
    assert_close(F.l1_loss(x, y, weight=w), (w * (x - y).abs()).sum() / w.sum())
    assert_close(F.huber_loss(x, y, weight=w), (w * F.huber_loss(x, y, reduction="none")).mean())


def test_option_errors():
    x, y = ember.rand(3, 4), ember.rand(3, 4)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        F.smooth_l1_loss(x, y, beta=-1.0)
    assert_close(F.smooth_l1_loss(x, y, beta=0.0), F.l1_loss(x, y))
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values"):
        F.huber_loss(x, y, delta=0.0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, y, ember.rand(3, 2))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, y, -ember.rand(3, 4))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, y, -0.5)
    assert_close(F.gaussian_nll_loss(x, y, 0.5), F.gaussian_nll_loss(x, y, ember.full((3, 4),
                                                                                       0.5)))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2]), p=3)
    with pytest.raises(RuntimeError, match="inconsistent weight size"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2]), weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should have "
                       "same dimension"):
        F.margin_ranking_loss(ember.rand(3), ember.rand(3, 1), ember.rand(3))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        F.cosine_embedding_loss(ember.rand(3, 4, 2), ember.rand(3, 4, 2), ember.ones(3))
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D"):
        F.triplet_margin_loss(x, y, ember.rand(4))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(x, y, x, margin=0)


def test_kl_div_reductions_and_warning():
    x = ember.log(ember.rand(3, 4) + 0.1)
    t = ember.rand(3, 4)
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both"):
        m = F.kl_div(x, t)
    assert_close(m, F.kl_div(x, t, reduction="sum") / 12)
    assert_close(F.kl_div(x, t, reduction="batchmean"), F.kl_div(x, t, reduction="sum") / 3)
    zero_t = ember.zeros(3, 4)
    assert F.kl_div(x, zero_t, reduction="sum").item() == 0.0  # 0 * log 0 = 0
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.kl_div(x, t, reduction="foo")


def _ctc_case():
    rng = np.random.default_rng(0)
    lp = ember.tensor(rng.normal(size=(6, 2, 4)), requires_grad=True)
    return lp, ember.tensor([[1, 2, 2], [3, 1, 0]])


def test_ctc_infeasible_alignments():
    lp, tg = _ctc_case()
    logp = F.log_softmax(lp, 2)
    loss = F.ctc_loss(logp, tg, ember.tensor([2, 5]), ember.tensor([3, 2]), reduction="none")
    assert math.isinf(loss[0].item()) and np.isfinite(loss[1].item())
    z = F.ctc_loss(logp, tg, (2, 5), (3, 2), reduction="none", zero_infinity=True)
    assert z[0].item() == 0.0 and z[1].item() == loss[1].item()
    z.sum().backward()
    assert np.isfinite(lp.grad.numpy()).all()
    assert_close(lp.grad[:, 0], np.zeros((6, 4)))


def test_ctc_formats_and_errors():
    lp, tg = _ctc_case()
    logp = F.log_softmax(lp, 2)
    padded = F.ctc_loss(logp, tg, (6, 5), (3, 2), reduction="none")
    flat = F.ctc_loss(logp, ember.tensor([1, 2, 2, 3, 1]), (6, 5), (3, 2), reduction="none")
    assert_close(padded, flat)
    single = F.ctc_loss(logp[:, 0], tg[0], ember.tensor(6), ember.tensor(3), reduction="none")
    assert single.shape == () and single.item() == pytest.approx(padded[0].item())
    assert_close(F.ctc_loss(logp, tg, (6, 5), (3, 2)), (padded / ember.tensor([3., 2.])).mean())
    assert_close(F.ctc_loss(logp, tg.float(), (6, 5), (3, 2), reduction="sum"), padded.sum())
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(logp, tg, (6, 5), (3, 2), blank=4)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6, "
                       "but got value 7"):
        F.ctc_loss(logp, tg, (7, 5), (3, 2))
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(logp, tg, (6, 5, 4), (3, 2))
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 4 at "
                       "dimension 1"):
        F.ctc_loss(logp, tg, (6, 5), (4, 2))
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.ctc_loss(logp, tg, (6, 5), (3, 2), reduction="foo")


def test_ctc_empty_target_is_all_blank_probability():
    lp, _ = _ctc_case()
    logp = F.log_softmax(lp, 2)
    loss = F.ctc_loss(logp, ember.tensor([[1], [1]]), (6, 4), (0, 0), reduction="none")
    expected = -logp[:, 0, 0].sum()
    assert loss[0].item() == pytest.approx(expected.item(), rel=1e-6)


def test_usual_class_target_batch_matches_the_full_checks():
    # the usual batch's shapes are checked at a glance (loss._usual_shapes) and its
    # values in the op (loss._target_arrays); anything else, and every error, still goes
    # through _class_target's full checks
    from ember.ops import loss

    rng = np.random.default_rng(3)
    logits = ember.tensor(rng.standard_normal((6, 4)), requires_grad=True)
    target = ember.tensor([0, 3, 1, 2, 3, 0])
    assert loss._usual_shapes(logits, target, None)
    x, t, shape = loss._class_target("cross_entropy", logits, target, None)
    assert x is logits and t is target and shape == (6,)
    safe, picked, valid = loss._target_arrays(target._data, None, 4, -100, np.float64)
    np.testing.assert_array_equal(safe, [0, 3, 1, 2, 3, 0])
    assert safe is not target._data and picked.dtype == np.float64 and valid.all()
    safe, picked, valid = loss._target_arrays(target._data, None, 4, 2, np.float64)
    np.testing.assert_array_equal(valid, [True, True, True, False, True, True])
    np.testing.assert_array_equal(safe, [0, 3, 1, 0, 3, 0])     # (an ignored index: 0)
    assert not loss._usual_shapes(logits, target, ember.ones(4))
    assert not loss._usual_shapes(logits, target.int(), None)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(logits, ember.tensor([0, 4, 1, 2, 3, 0]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.cross_entropy(logits, ember.tensor([0, -1, 1, 2, 3, 0]))
    expected = -np.log(np.exp(logits.detach().numpy())
                       / np.exp(logits.detach().numpy()).sum(1, keepdims=True))
    expected = expected[np.arange(6), [0, 3, 1, 2, 3, 0]].mean()
    np.testing.assert_allclose(F.cross_entropy(logits, target).item(), expected, rtol=1e-12)


# ---------------------------------------------------------------------------
# the usual small batch's cross-entropy in one kernel call (loss._usual_cross_entropy)

from ember.autograd import gradcheck, gradgradcheck  # noqa: E402
from ember.ops import _native  # noqa: E402
from ember.ops import loss as loss_ops  # noqa: E402

needs_numba = pytest.mark.skipif(not _native.available(), reason="numba is not installed")


def _general(monkeypatch):
    """Switch the one-call path off: what the general path gives."""
    monkeypatch.setattr(loss_ops, "_usual_cross_entropy", lambda *args: None)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_usual_cross_entropy_equals_the_general_path(monkeypatch, dtype, reduction):
    rng = np.random.default_rng(12)
    x0 = (rng.standard_normal((37, 11)) * 3).astype(dtype)
    x0[4, 2] = 1e4                                  # (an extreme logit)
    t0 = rng.integers(0, 11, 37)
    results = []
    for usual in (True, False):
        if not usual:
            _general(monkeypatch)
        x, t = ember.tensor(x0, requires_grad=True), ember.tensor(t0)
        loss = F.cross_entropy(x, t, reduction=reduction)
        assert type(loss.grad_fn).__name__ == ("UsualCrossEntropy" if usual
                                               else "CrossEntropy")
        assert loss.grad_fn.name() == "NllLossBackward0" and loss.dtype == x.dtype
        t._data[:] = 0                              # (the backward kept its own targets)
        (loss * 1.5).backward()
        results.append((loss.item(), x.grad.numpy()))
    (got, got_grad), (expected, expected_grad) = results
    tight = 1e-6 if dtype == np.float32 else 1e-13
    assert got == pytest.approx(expected, rel=tight)
    np.testing.assert_allclose(got_grad, expected_grad, rtol=tight, atol=tight)
    # and against float64 NumPy
    z = x0.astype(np.float64)
    logp = z - z.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    scale = 1 / 37 if reduction == "mean" else 1.0
    assert got == pytest.approx(-logp[np.arange(37), t0].sum() * scale, rel=tight)
    onehot = np.eye(11)[t0]
    np.testing.assert_allclose(got_grad, 1.5 * scale * (np.exp(logp) - onehot), rtol=1e-5,
                               atol=tight)


@needs_numba
def test_usual_cross_entropy_raises_as_cross_entropy_does():
    x = ember.randn(6, 5, requires_grad=True)
    t = ember.tensor([0, 1, 2, 3, 4, 0])
    loss = F.cross_entropy(x, t)
    assert type(loss.grad_fn).__name__ == "UsualCrossEntropy"
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    loss = F.cross_entropy(x, t)
    with ember.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@needs_numba
def test_usual_cross_entropy_gradients_of_first_and_second_order():
    rng = np.random.default_rng(13)
    x = ember.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    t = ember.tensor(rng.integers(0, 4, 5))
    assert type(F.cross_entropy(x, t).grad_fn).__name__ == "UsualCrossEntropy"
    for reduction in ("mean", "sum"):
        assert gradcheck(lambda v, r=reduction: F.cross_entropy(v, t, reduction=r), (x,))
        assert gradgradcheck(lambda v, r=reduction: F.cross_entropy(v, t, reduction=r), (x,))


@pytest.mark.parametrize("case", ["weight", "smoothing", "ignored class", "none", "float target",
                                  "large", "uint8 target", "out of range", "no numba"])
def test_other_cross_entropies_take_the_general_path(monkeypatch, case):
    rng = np.random.default_rng(14)
    rows = 8 if case != "large" else loss_ops.USUAL_MAX // 10 + 1
    x = ember.tensor(rng.standard_normal((rows, 10)).astype(np.float32), requires_grad=True)
    t = ember.tensor(rng.integers(0, 10, rows))
    kwargs = {"weight": {"weight": ember.ones(10)}, "smoothing": {"label_smoothing": 0.1},
              "ignored class": {"ignore_index": 3}, "none": {"reduction": "none"}}.get(case, {})
    if case == "float target":
        t = ember.softmax(ember.randn(rows, 10), 1)
    if case == "uint8 target":
        t = t.byte()
    if case == "out of range":
        t._data[2] = 10
        with pytest.raises(IndexError, match="Target 10 is out of bounds."):
            F.cross_entropy(x, t)
        return
    if case == "no numba":
        with _native.use_numba(False):
            assert type(F.cross_entropy(x, t).grad_fn).__name__ != "UsualCrossEntropy"
        return
    loss = F.cross_entropy(x, t, **kwargs)
    assert type(loss.grad_fn).__name__ not in ("UsualCrossEntropy", "NoneType")
