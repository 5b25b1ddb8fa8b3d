"""Model architectures: torchvision's parameter names and shapes, forward passes, the
weight enums, and loading weights saved by PyTorch from the hub cache."""

import numpy as np
import pytest

import ember
from ember import hub
from ember.vision import models
from ember.vision.models import ResNet18_Weights, ResNet50_Weights


def test_resnet18_names_and_counts():
    model = models.resnet18()
    params = dict(model.named_parameters())
    state = model.state_dict()
    # 1 stem conv + 1 bn (2 tensors) + 8 blocks x 6 + 3 downsamples x 3 + fc (2) = 62
    assert len(params) == 62 and len(state) == 122     # + 20 batch norms x 3 buffers
    assert sum(p.numel() for p in params.values()) == 11_689_512
    assert list(state)[:7] == [
        "conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
        "bn1.num_batches_tracked", "layer1.0.conv1.weight"]
    assert list(params)[-8:] == [
        "layer4.1.conv1.weight", "layer4.1.bn1.weight", "layer4.1.bn1.bias",
        "layer4.1.conv2.weight", "layer4.1.bn2.weight", "layer4.1.bn2.bias", "fc.weight",
        "fc.bias"]
    shapes = {name: tuple(t.shape) for name, t in state.items()}
    assert shapes["conv1.weight"] == (64, 3, 7, 7)
    assert shapes["layer2.0.conv1.weight"] == (128, 64, 3, 3)
    assert shapes["layer2.0.downsample.0.weight"] == (128, 64, 1, 1)
    assert shapes["layer2.0.downsample.1.running_var"] == (128,)
    assert shapes["fc.weight"] == (1000, 512)
    assert "layer1.0.downsample.0.weight" not in shapes


def test_resnet_family_sizes():
    r50 = models.resnet50()
    assert len(list(r50.parameters())) == 161 and len(r50.state_dict()) == 320
    assert tuple(r50.state_dict()["layer1.0.conv3.weight"].shape) == (256, 64, 1, 1)
    assert tuple(r50.state_dict()["layer1.0.downsample.0.weight"].shape) == (256, 64, 1, 1)
    assert tuple(r50.fc.weight.shape) == (1000, 2048)
    assert sum(p.numel() for p in r50.parameters()) == 25_557_032
    assert sum(p.numel() for p in models.resnet34().parameters()) == 21_797_672


def test_small_models_forward():
    ember.manual_seed(0)
    lenet = models.LeNet()
    assert tuple(lenet(ember.randn(2, 1, 28, 28)).shape) == (2, 10)
    r20 = models.resnet20()
    assert sum(p.numel() for p in r20.parameters()) == 272_474
    out = r20(ember.randn(2, 3, 32, 32))
    assert tuple(out.shape) == (2, 10)
    out.sum().backward()
    assert r20.conv1.weight.grad is not None
    r18 = models.resnet18(num_classes=5)
    assert tuple(r18(ember.randn(1, 3, 40, 40)).shape) == (1, 5)
    zero = models.resnet18(zero_init_residual=True)
    assert float(zero.layer1[0].bn2.weight.abs().sum()) == 0.0


def randomize(model):
    """Random values for every float entry, so batch norms are not the identity."""
    rng = np.random.default_rng(0)
    state = {}
    for name, t in model.state_dict().items():
        if not t.is_floating_point():
            state[name] = t
        elif name.endswith("running_var") or name.endswith("bn.weight"):
            state[name] = ember.tensor(rng.uniform(0.5, 1.5, t.shape).astype(np.float32))
        else:
            scale = 0.1 if t.ndim > 1 else 0.2
            state[name] = ember.tensor((rng.standard_normal(t.shape) * scale).astype(np.float32))
    model.load_state_dict(state)
    return model.eval()


def reference_forward(torch, state, x, bottleneck: bool, layers):
    """torchvision's ResNet written out with torch's functional ops."""
    tf = torch.nn.functional
    sd = {k: torch.from_numpy(v.numpy().copy()) for k, v in state.items()}

    def bn(y, p):
        return tf.batch_norm(y, sd[p + ".running_mean"], sd[p + ".running_var"],
                             sd[p + ".weight"], sd[p + ".bias"], False, 0.0, 1e-5)

    y = tf.relu(bn(tf.conv2d(x, sd["conv1.weight"], stride=2, padding=3), "bn1"))
    y = tf.max_pool2d(y, 3, 2, 1)
    for li, blocks in enumerate(layers, 1):
        for b in range(blocks):
            p = f"layer{li}.{b}"
            stride = 2 if b == 0 and li > 1 else 1
            if bottleneck:
                out = tf.relu(bn(tf.conv2d(y, sd[p + ".conv1.weight"]), p + ".bn1"))
                out = tf.relu(bn(tf.conv2d(out, sd[p + ".conv2.weight"], stride=stride,
                                           padding=1), p + ".bn2"))
                out = bn(tf.conv2d(out, sd[p + ".conv3.weight"]), p + ".bn3")
            else:
                out = tf.relu(bn(tf.conv2d(y, sd[p + ".conv1.weight"], stride=stride,
                                           padding=1), p + ".bn1"))
                out = bn(tf.conv2d(out, sd[p + ".conv2.weight"], padding=1), p + ".bn2")
            if p + ".downsample.0.weight" in sd:
                shortcut = bn(tf.conv2d(y, sd[p + ".downsample.0.weight"], stride=stride),
                              p + ".downsample.1")
            else:
                shortcut = y
            y = tf.relu(out + shortcut)
    y = tf.adaptive_avg_pool2d(y, 1).flatten(1)
    return tf.linear(y, sd["fc.weight"], sd["fc.bias"])


@pytest.mark.parametrize("name, bottleneck, layers", [
    ("resnet18", False, [2, 2, 2, 2]), ("resnet50", True, [3, 4, 6, 3])])
def test_resnet_matches_torchvision_architecture(name, bottleneck, layers):
    torch = pytest.importorskip("torch")
    model = randomize(getattr(models, name)(num_classes=7))
    shape = (2, 3, 48, 40) if name == "resnet18" else (1, 3, 32, 32)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    with ember.no_grad():
        ours = model(ember.tensor(x)).numpy()
    with torch.no_grad():
        theirs = reference_forward(torch, model.state_dict(), torch.from_numpy(x), bottleneck,
                                   layers).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=2e-4)


def test_weight_enums():
    w = ResNet18_Weights.DEFAULT
    assert w is ResNet18_Weights.IMAGENET1K_V1
    assert w.url == "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    assert ResNet50_Weights.DEFAULT is ResNet50_Weights.IMAGENET1K_V2
    assert ResNet18_Weights.verify("DEFAULT") is w
    assert ResNet18_Weights.verify("ResNet18_Weights.IMAGENET1K_V1") is w
    assert len(w.meta["categories"]) == 1000 and w.meta["num_params"] == 11_689_512
    with pytest.raises(ValueError, match="IMAGENET1K_V9"):
        ResNet18_Weights.verify("IMAGENET1K_V9")
    preprocess = w.transforms()
    img = np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    batch = preprocess(img)
    assert tuple(batch.shape) == (3, 224, 224) and batch.dtype is ember.float32
    # constant gray 0.5 comes out as (0.5 - mean) / std per channel
    gray = preprocess(ember.full((3, 256, 256), 0.5))
    np.testing.assert_allclose(gray[:, 0, 0].numpy(), (0.5 - np.array([0.485, 0.456, 0.406]))
                               / np.array([0.229, 0.224, 0.225]), rtol=1e-5)
    assert preprocess.resize_size == [256] and preprocess.crop_size == [224]
    assert ResNet50_Weights.IMAGENET1K_V2.transforms().resize_size == [232]


def test_pretrained_weights_come_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setattr(hub, "_hub_dir", None)
    with pytest.raises(FileNotFoundError) as info:
        models.resnet18(weights=ResNet18_Weights.DEFAULT)
    message = str(info.value)
    assert "resnet18-f37072fd.pth" in message
    assert str(tmp_path / "hub" / "checkpoints") in message
    with pytest.raises(ValueError, match="num_classes"):
        models.resnet18(weights="DEFAULT", num_classes=10)


def test_torchvision_state_dict_loads(tmp_path, monkeypatch):
    """A state dict saved by PyTorch under torchvision's names loads through the hub."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setattr(hub, "_hub_dir", None)
    source = randomize(models.resnet18())
    torch_state = {k: torch.from_numpy(v.numpy().copy()) for k, v in
                   source.state_dict().items()}
    cache = tmp_path / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    torch.save(torch_state, cache / "resnet18-f37072fd.pth")
    # our file is not the real one, so torchvision's hash check must refuse it ...
    with pytest.raises(RuntimeError, match="invalid hash value"):
        models.resnet18(weights=ResNet18_Weights.DEFAULT)
    # ... and with the check skipped the weights load under their torchvision names
    monkeypatch.setattr(hub, "_check_hash", lambda path, name: None)
    model = models.resnet18(weights=ResNet18_Weights.DEFAULT).eval()
    x = ember.randn(1, 3, 32, 32)
    with ember.no_grad():
        np.testing.assert_allclose(model(x).numpy(), source(x).numpy(), rtol=1e-5, atol=1e-6)
    # the fine-tuning recipe: swap the classifier for a new one
    model.fc = ember.nn.Linear(model.fc.in_features, 2)
    assert tuple(model(x).shape) == (1, 2)
