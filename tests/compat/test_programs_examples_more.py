"""More of pytorch/examples, in our words, on tiny data: time_sequence_prediction (two
LSTMCells in double precision, trained by LBFGS with a closure, then extrapolating), the
VAE (reparameterization, binary cross entropy + KL), the polynomial regression example
(features by ``cat``, smooth L1, updates through ``.data``) and REINFORCE (a softmax
policy, ``Categorical.log_prob``, normalized returns); fast_neural_style, the translation
tutorial's nn.Transformer with masks, and mnist_rnn.  Each asserts what the program
shows; with PyTorch installed, the same program from the same weights gives the same
numbers.
"""

from __future__ import annotations

import math

import numpy as np

import ember

from ._programs import assert_same_run, decreased, load_state, run_both, state_of


def time_sequence_prediction(torch, state=None):
    nn = torch.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, 12)
            self.lstm2 = nn.LSTMCell(12, 12)
            self.linear = nn.Linear(12, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t, c_t, h_t2, c_t2 = (torch.zeros(input.size(0), 12, dtype=torch.double)
                                    for _ in range(4))
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _ in range(future):  # feed the prediction back in
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return torch.cat(outputs, dim=1)

    period, length, n = 20, 40, 8
    shifts = np.random.default_rng(0).integers(-4 * period, 4 * period, n).reshape(n, 1)
    data = np.sin((np.arange(length) + shifts) / period).astype(np.float64)
    input, target = torch.from_numpy(data[3:, :-1]), torch.from_numpy(data[3:, 1:])
    torch.manual_seed(0)
    seq = Sequence()
    seq.double()
    load_state(torch, seq, state)
    first = state_of(seq)
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
    test_losses = []
    for _ in range(3):
        def closure():
            optimizer.zero_grad()
            loss = criterion(seq(input), target)
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            pred = seq(torch.from_numpy(data[:3, :-1]), future=10)
            test_losses.append(criterion(pred[:, :-10], torch.from_numpy(data[:3, 1:])).item())
    return {"losses": test_losses, "prediction_shape": list(pred.shape), "state": first}


def vae(torch, state=None):
    nn = torch.nn
    F = torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc21, self.fc22 = nn.Linear(64, 32), nn.Linear(32, 4), nn.Linear(32, 4)
            self.fc3, self.fc4 = nn.Linear(4, 32), nn.Linear(32, 64)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar, eps):
            return mu + eps * torch.exp(0.5 * logvar)

        def decode(self, z):
            return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

        def forward(self, x, eps):
            mu, logvar = self.encode(x.view(-1, 64))
            return self.decode(self.reparameterize(mu, logvar, eps)), mu, logvar

    def loss_function(recon_x, x, mu, logvar):
        bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return bce + kld

    rng = np.random.default_rng(1)
    x = torch.tensor((rng.random((16, 1, 8, 8)) > 0.5).astype(np.float32))
    torch.manual_seed(0)
    model = VAE()
    load_state(torch, model, state)
    first = state_of(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        # the noise of the reparameterization comes from NumPy: the same on both libraries
        eps = torch.tensor(rng.standard_normal((16, 4)).astype(np.float32))
        optimizer.zero_grad()
        recon, mu, logvar = model(x, eps)
        loss = loss_function(recon, x, mu, logvar)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "state": first}


def polynomial_regression(torch, state=None):
    F = torch.nn.functional
    degree = 4
    w_target = torch.tensor([[0.5], [-1.0], [0.3], [0.1]])
    b_target = torch.tensor([0.2])

    def make_features(x):
        x = x.unsqueeze(1)
        return torch.cat([x ** i for i in range(1, degree + 1)], 1)

    def f(x):
        return x.mm(w_target) + b_target.item()

    rng = np.random.default_rng(2)
    torch.manual_seed(0)
    fc = torch.nn.Linear(w_target.size(0), 1)
    load_state(torch, fc, state)
    first = state_of(fc)
    losses, errors = [], []
    for _ in range(60):
        errors.append((fc.weight.detach().view(-1) - w_target.view(-1)).abs().max().item())
        batch_x = make_features(torch.tensor(rng.standard_normal(32).astype(np.float32)))
        batch_y = f(batch_x)
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        losses.append(output.item())
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
    return {"losses": losses, "weight_error": [errors[0], errors[-1]], "state": first}


def reinforce(torch, state=None):
    nn = torch.nn
    F = torch.nn.functional
    Categorical = torch.distributions.Categorical

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 16)
            self.dropout = nn.Dropout(p=0.0)
            self.affine2 = nn.Linear(16, 2)
            self.saved_log_probs, self.rewards = [], []

        def forward(self, x):
            x = F.relu(self.dropout(self.affine1(x)))
            return F.softmax(self.affine2(x), dim=1)

    torch.manual_seed(0)
    policy = Policy()
    load_state(torch, policy, state)
    first = state_of(policy)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(5):
        for t in range(10):
            s = torch.from_numpy(rng.standard_normal(4).astype(np.float32)).float().unsqueeze(0)
            m = Categorical(policy(s))
            # the example samples m.sample(); fixed actions keep both libraries in step
            action = torch.tensor([t % 2])
            policy.saved_log_probs.append(m.log_prob(action))
            policy.rewards.append(1.0 if action.item() == 0 else 0.0)
        R, returns = 0.0, []
        for r in policy.rewards[::-1]:
            R = r + 0.99 * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = torch.cat([-log_prob * R
                                 for log_prob, R in zip(policy.saved_log_probs, returns)]).sum()
        optimizer.zero_grad()
        policy_loss.backward()
        optimizer.step()
        losses.append(policy_loss.item())
        del policy.rewards[:]
        del policy.saved_log_probs[:]
    probs = policy(torch.ones(1, 4))
    return {"losses": losses, "entropy": [Categorical(probs).entropy().item()],
            "p_action_0": [probs[0, 0].item()], "state": first}


def test_time_sequence_prediction():
    run = time_sequence_prediction(ember)
    assert run["prediction_shape"] == [3, 49]  # 39 steps seen + 10 extrapolated
    assert run["losses"][-1] < 0.05


def test_vae_learns():
    assert decreased(vae(ember)["losses"], 0.97)


def test_polynomial_regression_learns():
    first, last = polynomial_regression(ember)["weight_error"]
    assert last < 0.5 * first  # the weights approach the target polynomial's


def test_reinforce_prefers_the_rewarded_action():
    run = reinforce(ember)
    assert run["p_action_0"][0] > 0.5 and 0.0 < run["entropy"][0] < np.log(2)


def test_these_programs_match_pytorch():
    for program in (time_sequence_prediction, vae, polynomial_regression, reinforce):
        assert_same_run(*run_both(program), rtol=1e-3, atol=1e-5)


# ----------------------------------------------------------------------
# fast_neural_style, the translation tutorial's seq2seq Transformer, mnist_rnn


def fast_neural_style(torch, state=None):
    """The style-transfer network (reflection padding, affine InstanceNorm, nearest
    upsampling) trained on content + Gram-matrix style losses."""
    nn = torch.nn

    class ConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
            super().__init__()
            self.upsample = upsample
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            if self.upsample:
                x = torch.nn.functional.interpolate(x, mode="nearest",
                                                    scale_factor=self.upsample)
            return self.conv2d(self.reflection_pad(x))

    class ResidualBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1, self.in1 = ConvLayer(channels, channels, 3, 1), nn.InstanceNorm2d(
                channels, affine=True)
            self.conv2, self.in2 = ConvLayer(channels, channels, 3, 1), nn.InstanceNorm2d(
                channels, affine=True)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.in2(self.conv2(self.relu(self.in1(self.conv1(x))))) + x

    class TransformerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.in1 = ConvLayer(3, 8, 9, 1), nn.InstanceNorm2d(8, affine=True)
            self.conv2, self.in2 = ConvLayer(8, 16, 3, 2), nn.InstanceNorm2d(16, affine=True)
            self.res1 = ResidualBlock(16)
            self.deconv1 = ConvLayer(16, 8, 3, 1, upsample=2)
            self.in4 = nn.InstanceNorm2d(8, affine=True)
            self.deconv3 = ConvLayer(8, 3, 9, 1)
            self.relu = nn.ReLU()

        def forward(self, x):
            y = self.relu(self.in2(self.conv2(self.relu(self.in1(self.conv1(x))))))
            y = self.relu(self.in4(self.deconv1(self.res1(y))))
            return self.deconv3(y)

    def gram_matrix(y):
        b, ch, h, w = y.size()
        features = y.view(b, ch, w * h)
        return features.bmm(features.transpose(1, 2)) / (ch * h * w)

    def normalize_batch(batch):
        mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        return (batch.div_(255.0) - mean) / std

    rng = np.random.default_rng(4)
    x = torch.tensor((rng.random((2, 3, 16, 16)) * 255).astype(np.float32))
    gram_style = gram_matrix(torch.tensor(rng.random((1, 3, 16, 16)).astype(np.float32)))
    torch.manual_seed(0)
    net = TransformerNet()
    load_state(torch, net, state)
    first = state_of(net)
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    mse = nn.MSELoss()
    losses = []
    for _ in range(6):
        optimizer.zero_grad()
        y = net(x)
        content_loss = mse(normalize_batch(y.clone()), normalize_batch(x.clone()))
        style_loss = mse(gram_matrix(y), gram_style.expand(2, 3, 3))
        loss = content_loss + 1e-3 * style_loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "output_shape": list(y.shape), "state": first}


def translation(torch, state=None):
    """The translation tutorial's Seq2SeqTransformer: nn.Transformer with a causal target
    mask (``triu`` then ``masked_fill``), padding masks and ignore_index in the loss."""
    nn = torch.nn
    vocab, pad, bos, width = 11, 0, 1, 16

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, maxlen=32):
            super().__init__()
            den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = torch.arange(0, maxlen).reshape(maxlen, 1)
            pe = torch.zeros((maxlen, emb_size))
            pe[:, 0::2] = torch.sin(pos * den)
            pe[:, 1::2] = torch.cos(pos * den)
            self.register_buffer("pos_embedding", pe.unsqueeze(-2))

        def forward(self, token_embedding):
            return token_embedding + self.pos_embedding[:token_embedding.size(0), :]

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.Transformer(d_model=width, nhead=2, num_encoder_layers=1,
                                              num_decoder_layers=1, dim_feedforward=32,
                                              dropout=0.0)
            self.generator = nn.Linear(width, vocab)
            self.src_tok_emb, self.tgt_tok_emb = nn.Embedding(vocab, width), nn.Embedding(
                vocab, width)
            self.positional_encoding = PositionalEncoding(width)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask):
            src_emb = self.positional_encoding(self.src_tok_emb(src) * math.sqrt(width))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg) * math.sqrt(width))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                    src_padding_mask, tgt_padding_mask, src_padding_mask)
            return self.generator(outs)

    def square_subsequent_mask(size):
        mask = (torch.triu(torch.ones((size, size))) == 1).transpose(0, 1)
        return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)

    rng = np.random.default_rng(5)
    src_np = rng.integers(2, vocab, (6, 8))
    src_np[-2:, :3] = pad  # (S, N), the first three sentences shorter
    tgt_np = np.concatenate([np.full((1, 8), bos), src_np[::-1] % 9 + 2], 0)
    tgt_np[-2:, :3] = pad
    src, tgt = torch.tensor(src_np), torch.tensor(tgt_np)
    torch.manual_seed(0)
    model = Seq2Seq()
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    load_state(torch, model, state)
    first = state_of(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=pad)
    losses = []
    for _ in range(8):
        tgt_input = tgt[:-1, :]
        src_mask = torch.zeros((src.shape[0], src.shape[0])).type(torch.bool)
        tgt_mask = square_subsequent_mask(tgt_input.shape[0])
        logits = model(src, tgt_input, src_mask, tgt_mask, (src == pad).transpose(0, 1),
                       (tgt_input == pad).transpose(0, 1))
        optimizer.zero_grad()
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "state": first}


def mnist_rnn(torch, state=None):
    """The mnist_rnn example: image rows fed to a batch-first LSTM, BatchNorm1d, Adadelta
    with StepLR."""
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(input_size=8, hidden_size=16, batch_first=True)
            self.batchnorm = nn.BatchNorm1d(16)
            self.dropout = nn.Dropout(0.0)
            self.fc1, self.fc2 = nn.Linear(16, 16), nn.Linear(16, 10)

        def forward(self, input):
            output, _ = self.rnn(input.reshape(-1, 8, 8))
            output = self.fc1(self.batchnorm(output[:, -1, :]))
            return F.log_softmax(self.fc2(self.dropout(F.relu(output))), dim=1)

    rng = np.random.default_rng(6)
    labels = np.arange(32) % 10
    images = 0.2 * rng.random((32, 1, 8, 8)).astype(np.float32)
    images[np.arange(32), 0, labels % 8, :] = 1.0
    x, y = torch.tensor(images), torch.tensor(labels)
    torch.manual_seed(0)
    model = Net()
    load_state(torch, model, state)
    first = state_of(model)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    for _ in range(4):
        model.train()
        for b in range(2):
            optimizer.zero_grad()
            loss = F.nll_loss(model(x[16 * b:16 * b + 16]), y[16 * b:16 * b + 16])
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            losses.append(F.nll_loss(model(x), y, reduction="sum").item())
    return {"losses": losses, "lr": [optimizer.param_groups[0]["lr"]], "state": first}


def test_fast_neural_style_steps():
    run = fast_neural_style(ember)
    assert run["output_shape"] == [2, 3, 16, 16] and decreased(run["losses"])


def test_translation_transformer_learns():
    assert decreased(translation(ember)["losses"], 0.9)


def test_mnist_rnn_steps():
    run = mnist_rnn(ember)
    assert decreased(run["losses"]) and abs(run["lr"][0] - 0.7 ** 4) < 1e-12


def test_style_translation_rnn_match_pytorch():
    for program in (fast_neural_style, translation, mnist_rnn):
        assert_same_run(*run_both(program), rtol=1e-3, atol=1e-5)
