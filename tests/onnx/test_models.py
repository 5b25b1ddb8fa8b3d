"""The issue's end-to-end models, each exported with a dynamic batch size and run by
onnxruntime at batch sizes other than the traced one."""

from __future__ import annotations

import ember
from ember import nn
from tests.nn.test_complete_models import MnistCNN as MnistNet
from tests.onnx._check import check, op_types


class BasicBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the skip connection, then relu (ResNet)."""

    def __init__(self, channels: int, stride: int = 1):
        super().__init__()
        out = channels * stride
        self.conv1 = nn.Conv2d(channels, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1:
            self.downsample = nn.Sequential(nn.Conv2d(channels, out, 1, stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


def _randomize_batch_norms(model: nn.Module) -> None:
    """Non-trivial running statistics and affine parameters (fresh ones are 0/1)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(ember.randn(n))
            m.running_var.copy_(ember.rand(n) + 0.5)
            with ember.no_grad():
                m.weight.copy_(ember.randn(n))
                m.bias.copy_(ember.randn(n))


class LanguageModel(nn.Module):
    """Embedding, a 2-layer LSTM and a linear decoder over the vocabulary."""

    def __init__(self, vocab: int = 40, embed: int = 16, hidden: int = 24):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embedding(tokens))
        return self.decoder(out), h, c


class Encoder(nn.Module):
    """A small Transformer encoder (2 layers, batch_first) with a classification head."""

    def __init__(self, vocab: int = 30, d_model: int = 16):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=32,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, 3)

    def forward(self, tokens):
        return self.head(self.encoder(self.embedding(tokens)).mean(1))


def test_mnist_cnn():
    ember.manual_seed(0)
    model = MnistNet()
    proto = check(model, ember.randn(2, 1, 28, 28),
                  others=[ember.randn(1, 1, 28, 28), ember.randn(5, 1, 28, 28)],
                  input_names=["image"], output_names=["log_probs"],
                  dynamic_axes={"image": {0: "batch"}, "log_probs": {0: "batch"}})
    assert op_types(proto) == {"Conv", "Relu", "MaxPool", "Reshape", "Gemm", "LogSoftmax"}
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert model.training  # the export's eval mode is undone afterwards


def test_resnet_block():
    ember.manual_seed(0)
    block = BasicBlock(4, stride=2)
    _randomize_batch_norms(block)
    proto = check(block, ember.randn(2, 4, 8, 8),
                  others=[ember.randn(1, 4, 8, 8), ember.randn(3, 4, 8, 8)],
                  input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    assert "BatchNormalization" in op_types(proto)
    names = {i.name for i in proto.graph.initializer}
    assert {"conv1.weight", "bn1.running_mean", "bn1.running_var", "downsample.1.weight"} <= names


def test_lstm_language_model():
    ember.manual_seed(0)
    model = LanguageModel()
    tokens = ember.randint(0, 40, (3, 6))
    proto = check(model, tokens,
                  others=[ember.randint(0, 40, (1, 6)), ember.randint(0, 40, (4, 9))],
                  input_names=["tokens"], output_names=["logits", "h_n", "c_n"],
                  dynamic_axes={"tokens": {0: "batch", 1: "time"}})
    assert [n.op_type for n in proto.graph.node].count("LSTM") == 2
    shape = proto.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in shape] == ["batch", "time", 40]


def test_transformer_encoder():
    ember.manual_seed(0)
    model = Encoder()
    tokens = ember.randint(0, 30, (2, 7))
    check(model, tokens, others=[ember.randint(0, 30, (1, 7)), ember.randint(0, 30, (5, 7))],
          input_names=["tokens"], dynamic_axes={"tokens": {0: "batch"}})


def test_transformer_encoder_dynamic_sequence_length():
    ember.manual_seed(0)
    model = Encoder()
    tokens = ember.randint(0, 30, (2, 7))
    check(model, tokens, others=[ember.randint(0, 30, (3, 4)), ember.randint(0, 30, (1, 11))],
          input_names=["tokens"], dynamic_axes={"tokens": {0: "batch", 1: "seq"}})
