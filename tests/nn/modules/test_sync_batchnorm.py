"""SyncBatchNorm in one process (it is BatchNorm there) and convert_sync_batchnorm; the
multi-rank behaviour is tested in tests/distributed/test_multirank.py."""

import numpy as np
import pytest

import ember
from ember import nn

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_without_a_process_group_it_is_batch_norm():
    ember.manual_seed(0)
    x = ember.randn(6, 3, 4)
    sync, plain = nn.SyncBatchNorm(3), nn.BatchNorm1d(3)
    np.testing.assert_allclose(sync(x).detach().numpy(), plain(x).detach().numpy())
    np.testing.assert_allclose(sync.running_var.numpy(), plain.running_var.numpy())
    assert sync(ember.randn(2, 3, 2, 2, 2)).shape == (2, 3, 2, 2, 2)  # any rank >= 2
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sync(ember.randn(3))


def test_convert_sync_batchnorm_keeps_parameters_buffers_and_mode():
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3),
                          nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2, affine=False)))
    model[1].running_mean.fill_(0.5)
    model.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model  # the container is kept, its norm layers replaced
    assert type(model[1]) is nn.SyncBatchNorm and type(model[2][1]) is nn.SyncBatchNorm
    assert model[1].running_mean.tolist() == [0.5, 0.5, 0.5] and not model[1].training
    assert model[2][1].weight is None and model[2][1].num_features == 2
    bn = nn.BatchNorm2d(4)
    single = nn.SyncBatchNorm.convert_sync_batchnorm(bn)
    assert type(single) is nn.SyncBatchNorm and single.weight is bn.weight


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_repr_and_state_dict_match_pytorch():
    for lib in (ember, torch):
        m = lib.nn.SyncBatchNorm.convert_sync_batchnorm(lib.nn.Sequential(lib.nn.BatchNorm2d(3)))
        if lib is ember:
            ours = (repr(m), sorted(m.state_dict()))
    assert ours == (repr(m), sorted(m.state_dict()))
