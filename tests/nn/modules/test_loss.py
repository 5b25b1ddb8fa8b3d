"""Loss layers: options held and passed on, weight buffers in state_dict, legacy
arguments, constructor checks, printing."""

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
