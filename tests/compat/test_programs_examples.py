"""The two pytorch/examples programs the compatibility issue started from, in our words:
word_language_model (its RNN and Transformer models, the batchify/get_batch/repackage
helpers, a hand-written SGD step) and mnist_forward_forward (layers trained one by one
with the forward-forward goodness; labels written into the image with ``x[range(n), y]``).
Tiny stand-in data; with PyTorch installed the same program runs on it from the same
weights and the losses agree.
"""

from __future__ import annotations

import math

import numpy as np

import ember

from ._programs import assert_same_run, decreased, load_state, run_both, state_of


# ----------------------------------------------------------------------
# word_language_model


def language_models(torch):
    nn = torch.nn
    F = torch.nn.functional
    # the program's own import line (PyTorch keeps MultiheadAttention in activation.py)
    if torch is ember:
        from ember.nn.modules.activation import MultiheadAttention  # noqa: F401
    else:
        from torch.nn.modules.activation import MultiheadAttention  # noqa: F401

    class RNNModel(nn.Module):
        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0,
                     tie_weights=False):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ("LSTM", "GRU"):
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity,
                                  dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output).view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == "LSTM":
                return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                        weight.new_zeros(self.nlayers, bsz, self.nhid))
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.0, max_len=64):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float()
                                 * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x):
            return self.dropout(x + self.pe[:x.size(0), :])

    class TransformerModel(nn.Transformer):
        """Only the encoder of nn.Transformer is used; `decoder` is replaced by a Linear."""

        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                             num_encoder_layers=nlayers, dropout=dropout)
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def forward(self, src, has_mask=True):
            if has_mask:
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = self._generate_square_subsequent_mask(len(src))
            else:
                self.src_mask = None
            src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
            output = self.decoder(self.encoder(src, mask=self.src_mask))
            return F.log_softmax(output, dim=-1)

    return RNNModel, TransformerModel


def word_language_model(torch, state=None, kind: str = "LSTM", epochs: int = 3):
    RNNModel, TransformerModel = language_models(torch)
    ntokens, bptt, lr = 13, 5, 2.0
    corpus = torch.tensor(np.tile(np.arange(ntokens), 6))

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        return data.view(bsz, -1).t().contiguous()

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        return tuple(repackage_hidden(v) for v in h)

    train_data = batchify(corpus, 4)  # (19, 4)
    torch.manual_seed(0)
    if kind == "Transformer":
        model = TransformerModel(ntokens, 16, 2, 32, 2)
    else:
        model = RNNModel(kind, ntokens, 16, 16, 2, tie_weights=True)
    load_state(torch, model, state)
    first = state_of(model)
    criterion = torch.nn.NLLLoss()
    losses = []
    for _ in range(epochs):
        model.train()
        if kind != "Transformer":
            hidden = model.init_hidden(4)
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            if kind == "Transformer":
                output = model(data).view(-1, ntokens)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
    return {"losses": losses, "state": first}


def test_word_language_model_learns():
    for kind in ("GRU", "RNN_TANH", "Transformer"):
        run = word_language_model(ember, kind=kind, epochs=10)
        assert decreased(run["losses"], 0.8), (kind, run["losses"])
    # the 2-layer LSTM barely moves in this budget (on PyTorch too): it must run and stay finite
    run = word_language_model(ember, kind="LSTM")
    assert np.isfinite(run["losses"]).all() and len(run["losses"]) == 12


def test_word_language_model_matches_pytorch():
    for kind in ("LSTM", "Transformer"):
        assert_same_run(*run_both(word_language_model, kind=kind), rtol=1e-3, atol=1e-5)


# ----------------------------------------------------------------------
# mnist_forward_forward


def forward_forward(torch, state=None):
    nn = torch.nn

    def overlay_y_on_x(x, y):
        x_ = x.clone()
        x_[:, :10] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        return x_

    class Layer(nn.Linear):
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            super().__init__(in_features, out_features, bias, device, dtype)
            self.relu = torch.nn.ReLU()
            self.opt = torch.optim.Adam(self.parameters(), lr=0.03)
            self.threshold = 2.0
            self.num_epochs = 30

        def forward(self, x):
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

        def train(self, x_pos, x_neg):  # (shadows Module.train, as the example does)
            losses = []
            for _ in range(self.num_epochs):
                g_pos = self.forward(x_pos).pow(2).mean(1)
                g_neg = self.forward(x_neg).pow(2).mean(1)
                loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold,
                                                          g_neg - self.threshold]))).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                losses.append(loss.item())
            return self.forward(x_pos).detach(), self.forward(x_neg).detach(), losses

    class Net(torch.nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.layers = [Layer(dims[d], dims[d + 1]) for d in range(len(dims) - 1)]

        def predict(self, x):
            goodness_per_label = []
            for label in range(10):
                h = overlay_y_on_x(x, label)
                goodness = []
                for layer in self.layers:
                    h = layer(h)
                    goodness += [h.pow(2).mean(1)]
                goodness_per_label += [sum(goodness).unsqueeze(1)]
            return torch.cat(goodness_per_label, 1).argmax(1)

        def train(self, x_pos, x_neg):
            h_pos, h_neg, curves = x_pos, x_neg, []
            for layer in self.layers:
                h_pos, h_neg, losses = layer.train(h_pos, h_neg)
                curves.append(losses)
            return curves

    rng = np.random.default_rng(9)
    labels = np.arange(40) % 10
    images = 0.2 * rng.random((40, 64), dtype=np.float32)
    for k in range(10):
        images[labels == k, 10 + 5 * k:15 + 5 * k] = 1.0  # a band per class
    x, y = torch.tensor(images), torch.tensor(labels)
    torch.manual_seed(0)
    net = Net([64, 32, 32])
    if state is not None:
        for i, layer in enumerate(net.layers):
            load_state(torch, layer, state[i])
    first = [state_of(layer) for layer in net.layers]
    x_pos = overlay_y_on_x(x, y)
    wrong = torch.tensor((labels + 1 + rng.integers(0, 9, 40)) % 10)  # never the true label
    x_neg = overlay_y_on_x(x, wrong)
    curves = net.train(x_pos, x_neg)
    error = 1.0 - net.predict(x).eq(y).float().mean().item()
    return {"layer0": curves[0], "layer1": curves[1], "error": [error], "state": first,
            "overlay": x_pos[:3, :10].numpy()}


def test_forward_forward_trains_layer_by_layer():
    run = forward_forward(ember)
    assert decreased(run["layer0"], 0.8) and decreased(run["layer1"])
    # the label is written as the image's maximum at column y, the other 9 columns are 0
    np.testing.assert_array_equal(run["overlay"].argmax(1), [0, 1, 2])
    assert (run["overlay"] > 0).sum() == 3
    assert run["error"][0] < 0.9  # better than chance on the training images


def test_forward_forward_matches_pytorch():
    assert_same_run(*run_both(forward_forward), rtol=1e-3, atol=1e-5)
