"""Model programs from pytorch/examples and nanoGPT, in our words, on tiny data.

A GPT (causal self-attention by hand with a ``tril`` mask and ``masked_fill``, and through
``F.scaled_dot_product_attention``; weight tying; ``configure_optimizers`` with decay and
no-decay parameter groups; ``generate`` with ``topk`` and ``multinomial``), DCGAN
(ConvTranspose2d, BatchNorm2d, BCELoss, ``weights_init`` through ``apply``), super
resolution (PixelShuffle, ``init.orthogonal_``), a GCN (sparse adjacency, ``spmm``) and a
vision transformer (patches by a strided Conv2d, a class token, nn.TransformerEncoder).
Each runs a few steps with ember and asserts shapes and falling losses; where PyTorch is
installed the same program runs on it from the same initial weights and data, and the
losses agree.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import ember

from ._programs import assert_same_run, decreased, load_state, pytorch, run_both, state_of


def rng_data(seed: int, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------
# nanoGPT / minGPT


def gpt_model(torch, flash: bool, vocab: int = 17, block: int = 8, n_embd: int = 16,
              n_head: int = 2, n_layer: int = 2):
    nn = torch.nn
    F = torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.attn_dropout = nn.Dropout(0.0)
            self.resid_dropout = nn.Dropout(0.0)
            self.n_head, self.n_embd = n_head, n_embd
            self.register_buffer("bias", torch.tril(torch.ones(block, block))
                                 .view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            if flash:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                                   is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                att = F.softmax(att, dim=-1)
                att = self.attn_dropout(att)
                y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block, n_embd),
                drop=nn.Dropout(0.0), h=nn.ModuleList([Block() for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for blk in self.transformer.h:
                x = blk(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [{"params": decay_params, "weight_decay": weight_decay},
                            {"params": nodecay_params, "weight_decay": 0.0}]
            fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == "cuda"
            extra_args = dict(fused=True) if use_fused else dict()
            return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return GPT()


def gpt_program(torch, state=None, flash: bool = False):
    torch.manual_seed(0)
    model = gpt_model(torch, flash)
    load_state(torch, model, state)
    first = state_of(model)
    text = np.tile(np.arange(17), 8)  # a repeating sequence: easy to predict
    starts = np.arange(0, 96, 6)
    x = torch.tensor(np.stack([text[i:i + 8] for i in starts]))
    y = torch.tensor(np.stack([text[i + 1:i + 9] for i in starts]))
    optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95), "cpu")
    losses = []
    for _ in range(30):
        _, loss = model(x, y)
        losses.append(loss.item())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return {"losses": losses, "groups": [len(g["params"]) for g in optimizer.param_groups],
            "params": [model.get_num_params()], "state": first, "model": model}


def test_gpt_trains_and_generates():
    for flash in (False, True):
        run = gpt_program(ember, flash=flash)
        model = run.pop("model")
        assert decreased(run["losses"], 0.7), run["losses"]
        assert model.transformer.wte.weight is model.lm_head.weight  # tied: counted once
        assert run["groups"] == [10, 18]  # 2-D weights decay; biases and norms do not
        model.eval()
        ember.manual_seed(1)
        out = model.generate(ember.tensor([[0, 1, 2]]), max_new_tokens=12, top_k=3)
        assert out.shape == (1, 15) and out.dtype == ember.int64
        assert int(out.max()) < 17


def test_gpt_flash_attention_gives_the_same_losses():
    ours_manual = gpt_program(ember, flash=False)
    ours_flash = gpt_program(ember, flash=True)
    np.testing.assert_allclose(ours_manual["losses"], ours_flash["losses"], rtol=1e-4)


def test_gpt_matches_pytorch():
    torch = pytorch()
    for flash in (False, True):
        ours = gpt_program(ember, flash=flash)
        theirs = gpt_program(torch, ours["state"], flash=flash)
        ours.pop("model"), theirs.pop("model")
        assert_same_run(ours, theirs, rtol=2e-3, atol=1e-5)


# ----------------------------------------------------------------------
# DCGAN


def dcgan_program(torch, state=None, steps: int = 4):
    nn = torch.nn
    nz, ngf, ndf, nc = 8, 8, 8, 1  # 16 x 16 images

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            torch.nn.init.normal_(m.weight, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            torch.nn.init.normal_(m.weight, 1.0, 0.02)
            torch.nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf), nn.ReLU(True),
                nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, input):
            return self.main(input).view(-1, 1).squeeze(1)

    torch.manual_seed(0)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    state = state or {}
    load_state(torch, netG, state.get("G"))
    load_state(torch, netD, state.get("D"))
    first = {"G": state_of(netG), "D": state_of(netD)}
    criterion = nn.BCELoss()
    real_images = torch.tensor(np.tanh(rng_data(4, 8, nc, 16, 16)))
    noises = [torch.tensor(rng_data(10 + i, 8, nz, 1, 1)) for i in range(steps)]
    fixed_noise = torch.tensor(rng_data(99, 4, nz, 1, 1))
    real_label, fake_label = 1.0, 0.0
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    errDs, errGs, d_x = [], [], []
    for noise in noises:
        netD.zero_grad()
        batch_size = real_images.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_images.dtype)
        output = netD(real_images)
        errD_real = criterion(output, label)
        errD_real.backward()
        d_x.append(output.mean().item())
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        errDs.append((errD_real + errD_fake).item())
        errGs.append(errG.item())
    with torch.no_grad():
        sample = netG.eval()(fixed_noise)
    return {"errD": errDs, "errG": errGs, "D_x": d_x, "sample": sample.numpy(),
            "state": first}


def test_dcgan_steps():
    run = dcgan_program(ember)
    assert run["sample"].shape == (4, 1, 16, 16)
    assert np.abs(run["sample"]).max() <= 1.0  # Tanh
    assert decreased(run["errD"])  # the discriminator learns to tell real from fake
    assert all(0.0 < p < 1.0 for p in run["D_x"])


def test_dcgan_matches_pytorch():
    assert_same_run(*run_both(dcgan_program), rtol=1e-3, atol=1e-5)


# ----------------------------------------------------------------------
# super_resolution (sub-pixel convolution)


def super_resolution_program(torch, state=None):
    nn = torch.nn
    init = torch.nn.init

    class Net(nn.Module):
        def __init__(self, upscale_factor):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            self._initialize_weights()

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            return self.pixel_shuffle(self.conv4(x))

        def _initialize_weights(self):
            init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv4.weight)

    torch.manual_seed(0)
    model = Net(upscale_factor=2)
    load_state(torch, model, state)
    first = state_of(model)
    # smooth "images": a low-resolution input and its 2x target
    grid = np.linspace(0, 1, 16, dtype=np.float32)
    target = np.stack([np.outer(np.sin(3 * grid + p), np.cos(2 * grid - p)) * 0.5 + 0.5
                       for p in np.linspace(0, 1, 6)])[:, None].astype(np.float32)
    target_t = torch.tensor(target)
    input_t = torch.nn.functional.avg_pool2d(target_t, 2)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses, psnr = [], []
    for _ in range(15):
        optimizer.zero_grad()
        loss = criterion(model(input_t), target_t)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        psnr.append(10 * math.log10(1 / loss.item()))
    w = model.conv2.weight.detach().numpy().reshape(16, -1)
    return {"losses": losses, "psnr": psnr, "output_shape": list(model(input_t).shape),
            "rows_orthogonal": [float(np.abs(w @ w.T / 2.0 - np.eye(16)).max())],
            "state": first}


def test_super_resolution_steps():
    run = super_resolution_program(ember)
    assert run["output_shape"] == [6, 1, 16, 16]
    assert decreased(run["losses"], 0.5) and run["psnr"][-1] > run["psnr"][0]
    # orthogonal_ with gain sqrt(2): rows of the flattened weight are orthogonal, norm^2 = 2
    fresh = super_resolution_program(ember)["state"]["conv2.weight"].reshape(16, -1)
    np.testing.assert_allclose(fresh @ fresh.T, 2.0 * np.eye(16), atol=1e-5)


def test_super_resolution_matches_pytorch():
    assert_same_run(*run_both(super_resolution_program), rtol=1e-3, atol=1e-5)


# ----------------------------------------------------------------------
# GCN (Kipf & Welling) with a sparse normalized adjacency


def gcn_program(torch, state=None):
    nn = torch.nn
    F = torch.nn.functional

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super().__init__()
            self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(torch.Tensor(output_dim))
                nn.init.zeros_(self.bias)

        def forward(self, input_tensor, adj_mat):
            support = torch.mm(input_tensor, self.kernel)
            output = torch.spmm(adj_mat, support)
            if self.bias is not None:
                output = output + self.bias
            return output

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.0):
            super().__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input_tensor, adj_mat):
            x = self.gc1(input_tensor, adj_mat)
            x = F.relu(x)
            x = self.dropout(x)
            x = self.gc2(x, adj_mat)
            return F.log_softmax(x, dim=1)

    # two communities of 10 nodes; features are noisy community indicators
    n = 20
    labels_np = np.repeat([0, 1], 10)
    rng = np.random.default_rng(5)
    adj = (rng.random((n, n)) < np.where(labels_np[:, None] == labels_np, 0.5, 0.05))
    adj = np.triu(adj, 1)
    adj = (adj | adj.T | np.eye(n, dtype=bool)).astype(np.float32)
    d_inv_sqrt = 1.0 / np.sqrt(adj.sum(1))
    norm = d_inv_sqrt[:, None] * adj * d_inv_sqrt[None, :]
    rows, cols = np.nonzero(norm)
    adj_t = torch.sparse_coo_tensor(torch.tensor(np.stack([rows, cols])),
                                    torch.tensor(norm[rows, cols]), (n, n)).coalesce()
    features = torch.tensor(np.eye(2, dtype=np.float32)[labels_np] * 0.5
                            + 0.5 * rng_data(6, n, 2))
    features = torch.cat([features, torch.tensor(rng_data(7, n, 6))], dim=1)
    labels = torch.tensor(labels_np)
    idx_train = torch.tensor([0, 1, 2, 10, 11, 12])
    idx_test = torch.tensor([i for i in range(n) if i not in (0, 1, 2, 10, 11, 12)])
    torch.manual_seed(0)
    model = GCN(8, 16, 2)
    load_state(torch, model, state)
    first = state_of(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    losses = []
    for _ in range(20):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj_t)
        loss = F.nll_loss(output[idx_train], labels[idx_train])
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        output = model(features, adj_t)
    accuracy = (output[idx_test].argmax(1) == labels[idx_test]).float().mean().item()
    return {"losses": losses, "accuracy": [accuracy], "state": first}


def test_gcn_learns_the_communities():
    run = gcn_program(ember)
    assert decreased(run["losses"], 0.5)
    assert run["accuracy"][0] >= 0.8


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_gcn_matches_pytorch():
    assert_same_run(*run_both(gcn_program), rtol=1e-3, atol=1e-5)


# ----------------------------------------------------------------------
# vision transformer


def vit_program(torch, state=None):
    nn = torch.nn
    img, patch, dim, classes = 16, 4, 32, 4

    class PatchEmbedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.projection = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embedding = nn.Parameter(torch.randn(1, (img // patch) ** 2 + 1, dim)
                                              * 0.02)

        def forward(self, x):
            x = self.projection(x).flatten(2).transpose(1, 2)  # (B, patches, dim)
            cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
            x = torch.cat((cls_tokens, x), dim=1)
            return x + self.pos_embedding

    class VisionTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embedding = PatchEmbedding()
            layer = nn.TransformerEncoderLayer(d_model=dim, nhead=4, dim_feedforward=64,
                                               dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2,
                                                 enable_nested_tensor=False)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.encoder(self.patch_embedding(x))
            return self.head(self.norm(x[:, 0]))

    torch.manual_seed(0)
    model = VisionTransformer()
    load_state(torch, model, state)
    first = state_of(model)
    labels_np = np.arange(16) % classes
    images = 0.3 * rng_data(8, 16, 3, img, img)
    for k in range(classes):  # a bright quadrant per class
        r, c = divmod(k, 2)
        images[labels_np == k, :, 8 * r:8 * r + 8, 8 * c:8 * c + 8] += 1.0
    x, y = torch.tensor(images), torch.tensor(labels_np)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(12):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return {"losses": losses, "logits_shape": list(model(x).shape), "state": first}


def test_vit_steps():
    run = vit_program(ember)
    assert run["logits_shape"] == [16, 4]
    assert decreased(run["losses"], 0.7)


def test_vit_matches_pytorch():
    assert_same_run(*run_both(vit_program), rtol=2e-3, atol=1e-5)
