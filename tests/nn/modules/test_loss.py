"""Loss layers: options held and passed on, weight buffers in state_dict, legacy
arguments, constructor checks, printing."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.testing import assert_close


def _x(*shape, seed=0, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.uniform(low, high, shape).astype(np.float32))


def test_printing_and_module_paths():
    assert repr(nn.CrossEntropyLoss(weight=ember.ones(3))) == "CrossEntropyLoss()"
    assert repr(nn.CTCLoss()) == "CTCLoss()"
    assert repr(nn.TripletMarginLoss()) == "TripletMarginLoss()"
    assert nn.CrossEntropyLoss.__module__ == "ember.nn.modules.loss"


def test_weight_buffers_in_state_dict():
    w = ember.tensor([1.0, 2.0, 3.0])
    ce = nn.CrossEntropyLoss(weight=w)
    assert list(ce.state_dict()) == ["weight"] and ce.weight is w
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert nn.CrossEntropyLoss().weight is None
    bce = nn.BCEWithLogitsLoss(weight=w, pos_weight=w)
    assert list(bce.state_dict()) == ["weight", "pos_weight"]
    assert list(nn.MultiMarginLoss(weight=w).state_dict()) == ["weight"]
    assert ce.double().weight.dtype is ember.float64


def test_options_are_passed_on():
    x = _x(4, 3)
    t = ember.tensor([0, 2, 1, 2])
    w = ember.tensor([0.5, 1.0, 2.0])
    ce = nn.CrossEntropyLoss(weight=w, ignore_index=1, reduction="sum", label_smoothing=0.1)
    assert (ce.ignore_index, ce.label_smoothing, ce.reduction) == (1, 0.1, "sum")
    assert_close(ce(x, t), F.cross_entropy(x, t, w, ignore_index=1, reduction="sum",
                                           label_smoothing=0.1))
    logp = F.log_softmax(x, 1)
    assert_close(nn.NLLLoss(weight=w)(logp, t), F.nll_loss(logp, t, w))
    y = _x(4, 3, seed=1)
    assert_close(nn.SmoothL1Loss(beta=0.3)(x, y), F.smooth_l1_loss(x, y, beta=0.3))
    assert_close(nn.HuberLoss(delta=0.4, reduction="none")(x, y),
                 F.huber_loss(x, y, reduction="none", delta=0.4))
    assert_close(nn.L1Loss()(x, y), F.l1_loss(x, y))
    assert_close(nn.MSELoss(reduction="sum")(x, y), F.mse_loss(x, y, reduction="sum"))
    p = _x(4, 3, low=0.1, high=0.9)
    q = _x(4, 3, seed=2, low=0.0, high=1.0)
    assert_close(nn.BCELoss(weight=w)(p, q), F.binary_cross_entropy(p, q, w))
    assert_close(nn.BCEWithLogitsLoss(pos_weight=w)(x, q),
                 F.binary_cross_entropy_with_logits(x, q, pos_weight=w))
    assert_close(nn.KLDivLoss(reduction="batchmean", log_target=True)(x, y),
                 F.kl_div(x, y, reduction="batchmean", log_target=True))
    assert_close(nn.PoissonNLLLoss(log_input=False, full=True)(p, q * 3),
                 F.poisson_nll_loss(p, q * 3, log_input=False, full=True))
    var = _x(4, 3, low=0.5, high=1.0)
    assert_close(nn.GaussianNLLLoss(full=True)(x, y, var),
                 F.gaussian_nll_loss(x, y, var, full=True))
    s = ember.tensor([1.0, -1.0, 1.0, -1.0])
    assert_close(nn.CosineEmbeddingLoss(0.2)(x, y, s), F.cosine_embedding_loss(x, y, s, 0.2))
    assert_close(nn.MarginRankingLoss(0.1)(x[:, 0], y[:, 0], s),
                 F.margin_ranking_loss(x[:, 0], y[:, 0], s, 0.1))
    assert_close(nn.HingeEmbeddingLoss(0.5)(x, s[:, None].expand(4, 3)),
                 F.hinge_embedding_loss(x, s[:, None].expand(4, 3), 0.5))
    assert_close(nn.MultiMarginLoss(p=2, margin=0.5, weight=w)(x, t),
                 F.multi_margin_loss(x, t, p=2, margin=0.5, weight=w))
    lt = ember.tensor([[0, 1, -1], [2, -1, 0], [1, 2, 0], [-1, 0, 0]])
    assert_close(nn.MultiLabelMarginLoss()(x, lt), F.multilabel_margin_loss(x, lt))
    assert_close(nn.MultiLabelSoftMarginLoss(weight=w)(x, q),
                 F.multilabel_soft_margin_loss(x, q, w))
    assert_close(nn.SoftMarginLoss()(x, s[:, None].expand(4, 3)),
                 F.soft_margin_loss(x, s[:, None].expand(4, 3)))
    z = _x(4, 3, seed=3)
    assert_close(nn.TripletMarginLoss(margin=0.5, p=1, swap=True)(x, y, z),
                 F.triplet_margin_loss(x, y, z, margin=0.5, p=1, swap=True))
    dist = nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: (a - b).abs().sum(1))
    assert_close(dist(x, y, z), F.triplet_margin_with_distance_loss(
        x, y, z, distance_function=lambda a, b: (a - b).abs().sum(1)))
    default = nn.TripletMarginWithDistanceLoss()
    assert isinstance(default.distance_function, nn.PairwiseDistance)
    assert repr(default) == ("TripletMarginWithDistanceLoss(\n  (distance_function): "
                             "PairwiseDistance()\n)")


def test_ctc_loss_layer():
    lp = F.log_softmax(_x(5, 2, 4), 2)
    tg = ember.tensor([[1, 2], [3, 3]])
    m = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert_close(m(lp, tg, (5, 5), (2, 2)), F.ctc_loss(lp, tg, (5, 5), (2, 2), 0, "sum", True))


def test_legacy_arguments_and_checks():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        m = nn.MSELoss(size_average=False)
    assert m.reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.CrossEntropyLoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D"):
        nn.MultiMarginLoss(weight=ember.ones(2, 2))
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater "
                       "than 0, got 0 instead"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)


def test_cross_entropy_trains_a_linear_classifier():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    x = ember.randn(60, 2)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(150):
        loss = loss_fn(model(x), y)
        first = first if first is not None else loss.item()
        for p in model.parameters():
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
    assert loss.item() < 0.3 * first


REGRESSION_NODES = [
    (F.mse_loss, {}, "MseLossBackward0"),
    (F.smooth_l1_loss, {"beta": 0.5}, "SmoothL1LossBackward0"),
    (F.huber_loss, {"delta": 0.5}, "HuberLossBackward0"),
]


@pytest.mark.parametrize("loss, kw, name", REGRESSION_NODES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses_are_one_node_named_as_pytorchs(loss, kw, name, reduction):
    x = ember.randn(3, 4, requires_grad=True)
    out = loss(x, ember.randn(3, 4), reduction=reduction, **kw)
    assert out.grad_fn.name() == name
    assert [f is None for f, _ in out.grad_fn.next_functions] == [False, True]


@pytest.mark.parametrize("loss, kw, name", REGRESSION_NODES)
def test_regression_loss_nodes_match_pytorch(loss, kw, name):
    torch = pytest.importorskip("torch")
    tf = getattr(torch.nn.functional, loss.__name__)
    x = np.random.default_rng(0).standard_normal((3, 4))
    y = np.random.default_rng(1).standard_normal((3, 4))
    for reduction in ("mean", "sum", "none"):
        ours = ember.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        a = loss(ours, ember.tensor(y), reduction=reduction, **kw)
        b = tf(theirs, torch.tensor(y), reduction=reduction, **kw)
        assert a.grad_fn.name() == b.grad_fn.name()
        a.sum().backward()
        b.sum().backward()
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("loss, kw, name", REGRESSION_NODES)
def test_regression_loss_node_broadcasts_and_differentiates_the_target(loss, kw, name):
    """A (3, 1) target against a (3, 4) input: both gradients summed back to their own
    shapes, equal to those of the loss written out in ember ops."""
    rng = np.random.default_rng(2)
    x0, t0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
    d = x0 - t0
    if loss is F.mse_loss:
        slope = 2 * d
    elif loss is F.smooth_l1_loss:
        slope = np.where(np.abs(d) < 0.5, d / 0.5, np.sign(d))
    else:
        slope = np.where(np.abs(d) < 0.5, d, 0.5 * np.sign(d))
    x = ember.tensor(x0, requires_grad=True)
    t = ember.tensor(t0, requires_grad=True)
    with pytest.warns(UserWarning, match="target size"):
        out = loss(x, t, **kw)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), slope / 12)
    np.testing.assert_allclose(t.grad.numpy(), -slope.sum(1, keepdims=True) / 12)


def test_mse_loss_of_mixed_dtypes_and_of_no_elements():
    out = F.mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([1, 4]))  # int target: promoted
    assert out.dtype == ember.float32 and out.item() == 2.0
    x = ember.zeros(0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (nan, quietly, as PyTorch gives it)
        empty = F.mse_loss(x, ember.zeros(0))
        assert np.isnan(empty.item())
        empty.backward()
    assert x.grad.shape == (0,)


@pytest.mark.parametrize("with_logits", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_is_one_node_with_weights_as_parameters(with_logits, reduction):
    x = ember.rand(2, 3, requires_grad=True)
    t = ember.rand(2, 3, requires_grad=True)
    w = ember.rand(3)
    if with_logits:
        out = F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=ember.rand(3),
                                                 reduction=reduction)
        assert out.grad_fn.name() == "BinaryCrossEntropyWithLogitsBackward0"
    else:
        out = F.binary_cross_entropy(x, t, weight=w, reduction=reduction)
        assert out.grad_fn.name() == "BinaryCrossEntropyBackward0"
    assert len(out.grad_fn.next_functions) == 2  # input and target: weights are no inputs


@pytest.mark.parametrize("with_logits", [False, True])
def test_binary_cross_entropy_nodes_match_pytorch(with_logits):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-3, 3, (4, 3)) if with_logits else rng.uniform(0.05, 0.95, (4, 3))
    t0, w0, p0 = rng.uniform(0, 1, (4, 3)), rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 3)
    for reduction in ("mean", "sum", "none"):
        for weighted in (False, True):
            results = []
            for lib in (ember, torch):
                x = lib.tensor(x0, requires_grad=True)
                t = lib.tensor(t0, requires_grad=True)
                kw = {"weight": lib.tensor(w0)} if weighted else {}
                if with_logits:
                    if weighted:
                        kw["pos_weight"] = lib.tensor(p0)
                    out = lib.nn.functional.binary_cross_entropy_with_logits(
                        x, t, reduction=reduction, **kw)
                else:
                    out = lib.nn.functional.binary_cross_entropy(x, t, reduction=reduction,
                                                                 **kw)
                (out * lib.tensor(np.arange(1.0, 13.0).reshape(4, 3)) if reduction == "none"
                 else out).sum().backward()
                results.append((out.grad_fn.name(), out.detach().numpy(), x.grad.numpy(),
                                t.grad.numpy()))
            assert results[0][0] == results[1][0]
            for ours, theirs in zip(results[0][1:], results[1][1:]):
                np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_weighted_binary_cross_entropy_nodes_pass_gradgradcheck():
    from ember.autograd import gradcheck, gradgradcheck

    rng = np.random.default_rng(4)
    w = ember.tensor(rng.uniform(0.5, 2, 3))
    p = ember.tensor(rng.uniform(0.5, 2, 3))
    x = ember.tensor(rng.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    t = ember.tensor(rng.uniform(0, 1, (2, 3)), requires_grad=True)
    for fn in (lambda a, b: F.binary_cross_entropy(a, b, weight=w),
               lambda a, b: F.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=p,
                                                               reduction="sum")):
        assert gradcheck(fn, (x, t))
        assert gradgradcheck(fn, (x, t))
