"""Complete models built from ember.nn train for a few steps and their loss goes down:
a ResNet-style block, an LSTM language model, a Transformer encoder classifier, and the
classic MNIST CNN of pytorch/examples."""

import ember
import ember.nn as nn
import ember.nn.functional as F


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


class TinyResNet(nn.Module):
    def __init__(self, classes: int = 4):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.block = ResidualBlock(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        return self.fc(self.pool(self.block(F.relu(self.stem(x)))).flatten(1))


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int = 50, embed: int = 16, hidden: int = 32):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embedding(tokens))
        return self.decoder(out)


class TransformerClassifier(nn.Module):
    def __init__(self, vocab: int = 30, d_model: int = 32, classes: int = 3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embedding(tokens)).mean(dim=1))


class MnistCNN(nn.Module):
    """The network of pytorch/examples' mnist/main.py."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = ember.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def _train(model, inputs, loss_fn, steps, optimizer):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_resnet_block_trains():
    ember.manual_seed(0)
    x = ember.randn(8, 1, 8, 8)
    y = ember.randint(0, 4, (8,))
    model = TinyResNet()
    losses = _train(model, x, lambda out: F.cross_entropy(out, y), 15,
                    ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    assert losses[-1] < 0.5 * losses[0]


def test_lstm_language_model_trains():
    ember.manual_seed(0)
    tokens = ember.randint(0, 50, (4, 12))
    model = LSTMLanguageModel()
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    losses = _train(model, inputs,
                    lambda out: F.cross_entropy(out.reshape(-1, 50), targets.reshape(-1)), 30,
                    ember.optim.Adam(model.parameters(), lr=0.01))
    assert losses[-1] < 0.8 * losses[0]


def test_transformer_encoder_classifier_trains():
    ember.manual_seed(0)
    tokens = ember.randint(0, 30, (16, 10))
    labels = tokens[:, 0] % 3  # the class is readable from the first token
    model = TransformerClassifier()
    losses = _train(model, tokens, lambda out: F.cross_entropy(out, labels), 30,
                    ember.optim.AdamW(model.parameters(), lr=3e-3))
    assert losses[-1] < 0.5 * losses[0]


def test_mnist_cnn_trains():
    ember.manual_seed(0)
    x = ember.randn(16, 1, 28, 28)
    y = ember.randint(0, 10, (16,))
    model = MnistCNN()
    losses = _train(model, x, lambda out: F.nll_loss(out, y), 8,
                    ember.optim.Adadelta(model.parameters(), lr=1.0))
    assert losses[-1] < 0.7 * losses[0]
