"""More of pytorch/examples, in our words, on tiny data: time_sequence_prediction (two
LSTMCells in double precision, trained by LBFGS with a closure, then extrapolating), the
VAE (reparameterization, binary cross entropy + KL), the polynomial regression example
(features by ``cat``, smooth L1, updates through ``.data``) and REINFORCE (a softmax
policy, ``Categorical.log_prob``, normalized returns).  Each asserts what the program
shows; with PyTorch installed, the same program from the same weights gives the same
numbers.
"""

from __future__ import annotations

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
