"""The benchmark suite: eight workloads on ember and on PyTorch, side by side.

Each workload is written once and run on both libraries (the same model code, the same
initial weights, fixed seeds).  The two take turns in one process, three turns each,
every turn warmed up before it is timed (see `alternate` for why not call by call), so
that noise from other processes hits both alike; the table shows the median time of
each and the ratio ember/PyTorch (lower is better) with its target, and the range of
the ratio over the turns ("rounds": a wide one means the machine's load moved during the
run, so read that ratio with care).  Peak memory is
measured in two fresh processes, one per library.  docs/performance.md has the results.

Both libraries use the same thread count: NumPy's BLAS (OpenBLAS) uses all cores by
default and PyTorch is set to ``os.cpu_count()``; ``--threads N`` pins both to N.
Without PyTorch installed only ember's column is filled.  Usage:
    python benchmarks/run.py [--only mlp,cnn] [--repeats 15] [--rounds 3] [--json FILE]
                             [--threads N]

Workloads: op overhead on tiny tensors (no grad / recording / recording + backward);
MLP 784-512-256-10 training step (batch 128, SGD momentum), and the same step written by
hand in NumPy as a reference (no framework: the floor for ember); the pytorch/examples MNIST
CNN training step (batch 64, Adadelta); a char-level GPT training step (2 blocks, 4 heads,
n_embd 128, context 64, batch 32, AdamW); an LSTM language-model training step (2 layers
of 256, seq 35, batch 20, vocabulary 10,000, SGD + clipping); matmul 2048x2048 forward
and forward+backward; peak resident memory of the CNN training at batch 256; the CNN's
batch-1 inference latency under no_grad.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default=None)

import numpy as np  # noqa: E402

# ---------------------------------------------------------------------------
# the workloads: build(lib) -> a closure running one step (same code for both libraries)


def _init_like(lib, model, seed: int = 0) -> None:
    """Give a model fixed weights from a NumPy generator (identical on both libraries)."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            scale = 1.0 / np.sqrt(p.shape[-1]) if p.dim() > 1 else 0.01
            values = rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)
            p.copy_(lib.tensor(values))


COMPILE = {"ember": False}  # --compiled: ember's MLP, CNN and GPT run through ember.compile


def _compiled(lib, model):
    """`model` through ``ember.compile`` when --compiled asks for it (ember only)."""
    return lib.compile(model) if COMPILE["ember"] and lib.__name__ == "ember" else model


def mlp_parts(lib) -> tuple:
    """The MLP workload for `lib`: (model, inputs, targets, optimizer); `mlp_step` and
    benchmarks/mlp_phases.py build their steps from it."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    _init_like(lib, model)
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 128))
    return model, x, y, lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def mlp_step(lib):
    F = lib.nn.functional  # noqa: N806
    model, x, y, opt = mlp_parts(lib)
    model = _compiled(lib, model)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def mlp_arrays() -> tuple:
    """The MLP's (weights, biases, inputs, targets) as NumPy arrays, for the steps written
    without a framework (`mlp_numpy_step`, benchmarks/mlp_phases.py)."""
    rng = np.random.default_rng(0)
    sizes = [784, 512, 256, 10]
    weights = [rng.uniform(-1 / np.sqrt(i), 1 / np.sqrt(i), (o, i)).astype(np.float32)
               for i, o in zip(sizes, sizes[1:])]
    biases = [np.full(o, 0.01, np.float32) for o in sizes[1:]]
    data = np.random.default_rng(1)
    return weights, biases, data.standard_normal((128, 784)).astype(np.float32), \
        data.integers(0, 10, 128)


def mlp_numpy_step():
    """The MLP step written by hand in NumPy: what ember's MLP step would take with no
    framework at all (the same shapes, math and update as `mlp_step`).  Its products go
    through ember's thread split, as ember's own do: ember keeps OpenBLAS on one
    thread (ops/_parallel.py), so a plain ``@`` would run on one."""
    from ember.ops._parallel import matmul as mm

    weights, biases, x, y = mlp_arrays()
    params = weights + biases
    velocity = [np.zeros_like(p) for p in params]
    rows = np.arange(128)

    def step():
        w0, w1, w2, b0, b1, b2 = params
        h1 = mm(x, w0.T) + b0
        a1 = np.maximum(h1, 0)
        h2 = mm(a1, w1.T) + b1
        a2 = np.maximum(h2, 0)
        z = mm(a2, w2.T) + b2
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[rows, y] -= 1
        p /= 128
        g2 = mm(p, w2)
        g2 *= h2 > 0
        g1 = mm(g2, w1)
        g1 *= h1 > 0
        grads = [mm(g1.T, x), mm(g2.T, a1), mm(p.T, a2), g1.sum(0), g2.sum(0), p.sum(0)]
        for param, v, g in zip(params, velocity, grads):
            v *= 0.9
            v += g
            param -= 0.01 * v
    return step


def mnist_cnn(lib):
    """The network of pytorch/examples' MNIST example."""
    nn, F = lib.nn, lib.nn.functional  # noqa: N806

    class Net(nn.Module):
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
            x = lib.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            return F.log_softmax(self.fc2(x), dim=1)

    model = Net()
    _init_like(lib, model)
    return model


def _cnn_batch(lib, batch: int):
    rng = np.random.default_rng(2)
    x = lib.tensor(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, batch))
    return x, y


def cnn_step(lib, batch: int = 64):
    model = mnist_cnn(lib)
    x, y = _cnn_batch(lib, batch)
    opt = lib.optim.Adadelta(model.parameters(), lr=1.0)
    model.train()
    model = _compiled(lib, model)

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.nll_loss(model(x), y)
        loss.backward()
        opt.step()
    return step


def cnn_latency(lib):
    model = mnist_cnn(lib)
    model.eval()
    x, _ = _cnn_batch(lib, 1)

    def infer():
        with lib.no_grad():
            return model(x)
    return infer


def gpt_step(lib):
    """A char-level GPT (nanoGPT-style blocks), one AdamW training step."""
    nn, F = lib.nn, lib.nn.functional  # noqa: N806
    vocab, n_embd, n_head, n_layer, block, batch = 65, 128, 4, 2, 64, 32

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)
            self.drop = nn.Dropout(0.1)
            self.register_buffer("mask", lib.tril(lib.ones(block, block)).view(
                1, 1, block, block))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(n_embd, dim=2)
            q = q.view(b, t, n_head, c // n_head).transpose(1, 2)
            k = k.view(b, t, n_head, c // n_head).transpose(1, 2)
            v = v.view(b, t, n_head, c // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // n_head) ** 0.5)
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            att = self.drop(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            return self.drop(self.proj(y))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(n_embd)
            self.attn = Attention()
            self.ln2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                     nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.1))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, n_embd)
            self.pos = nn.Embedding(block, n_embd)
            self.blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab)

        def forward(self, idx, targets):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(t))
            logits = self.head(self.ln_f(self.blocks(x)))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    model = GPT()
    _init_like(lib, model)
    model = _compiled(lib, model)
    rng = np.random.default_rng(3)
    idx = lib.tensor(rng.integers(0, vocab, (batch, block)))
    targets = lib.tensor(rng.integers(0, vocab, (batch, block)))
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)

    def step():
        opt.zero_grad()
        model(idx, targets).backward()
        opt.step()
    return step


def lstm_step(lib):
    """The word_language_model LSTM: embedding, 2-layer LSTM, decoder; SGD with clipping."""
    nn = lib.nn
    vocab, hidden, layers, seq, batch = 10_000, 256, 2, 35, 20

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(vocab, hidden)
            self.rnn = nn.LSTM(hidden, hidden, layers, dropout=0.2)
            self.decoder = nn.Linear(hidden, vocab)

        def forward(self, tokens, state):
            emb = self.drop(self.encoder(tokens))
            output, state = self.rnn(emb, state)
            return self.decoder(self.drop(output)).view(-1, vocab), state

    model = LanguageModel()
    _init_like(lib, model)
    rng = np.random.default_rng(4)
    tokens = lib.tensor(rng.integers(0, vocab, (seq, batch)))
    targets = lib.tensor(rng.integers(0, vocab, seq * batch))
    opt = lib.optim.SGD(model.parameters(), lr=20.0)
    state = (lib.zeros(layers, batch, hidden), lib.zeros(layers, batch, hidden))

    def step():
        opt.zero_grad()
        out, _ = model(tokens, state)
        nn.functional.cross_entropy(out, targets).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
    return step


def _matmul_operands(lib):
    rng = np.random.default_rng(5)
    a, b, g = (rng.standard_normal((2048, 2048)).astype(np.float32) for _ in range(3))
    return lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True), lib.tensor(g)


def matmul_forward(lib):
    a, b, _ = _matmul_operands(lib)

    def run():
        with lib.no_grad():
            return a @ b
    return run


def matmul_backward(lib):
    a, b, g = _matmul_operands(lib)

    def run():
        a.grad = b.grad = None
        (a @ b).backward(g)
    return run


def op_overhead(lib):
    """name -> closure, each running CHAIN elementwise ops on a 16-element tensor."""
    from benchmarks.op_overhead import workloads

    return workloads(lib, lib.__name__ == "torch")


# key (for --only), name, builder, target ratio
STEPS = [
    ("mlp", "MLP 784-512-256-10 step, batch 128", mlp_step, 1.0),
    ("cnn", "MNIST CNN step, batch 64, Adadelta", cnn_step, 1.0),
    ("gpt", "char GPT step (2x128, 4 heads, T=64, B=32)", gpt_step, 1.0),
    ("lstm", "LSTM LM step (2x256, seq 35, B=20, V=10k)", lstm_step, 1.0),
    ("matmul", "matmul 2048^2 float32, forward", matmul_forward, 1.0),
    ("matmul", "matmul 2048^2 float32, forward+backward", matmul_backward, 1.0),
    ("latency", "MNIST CNN batch-1 inference, no_grad", cnn_latency, 1.2),
]
# issue 15's targets for ember.compile against PyTorch eager (--compiled)
COMPILED_TARGET = {"mlp": 0.8, "cnn": 0.9, "gpt": 0.85}
# issue 15's targets (the recording rows keep the earlier 1.2)
OVERHEAD_TARGET = {"no grad": 1.3}
MEMORY_TARGET = 1.0
CHAIN = 20  # ops per call in benchmarks/op_overhead.py

# ---------------------------------------------------------------------------
# timing


WARM = 0.25  # seconds each library runs untimed when its turn comes (see `alternate`)


def alternate(ours, theirs, repeats: int, inner: int = 1, rounds: int = 3) -> tuple:
    """Median seconds per call of each closure, timed in alternating blocks, and the
    ratio ours/theirs of each round's medians (empty without `theirs`).

    The two libraries take turns `rounds` times, so that changes in the machine's load hit
    both alike; each turn first runs its workload untimed for WARM seconds, then times
    its share of the `repeats` calls.
    NOTE: not call-by-call alternation.  Both libraries keep their worker threads spinning
    for a while after a parallel call (OpenBLAS up to ~0.1 s, OpenMP less), so the
    library that ran last competes for the cores with the one being timed: measured this
    way, PyTorch's GPT step took 118 ms instead of the 63 ms it takes alone.  Pausing
    instead lets the threads fall asleep, and the next call pays for waking them (the MLP
    step of PyTorch: 13.5 ms instead of 2.5 ms).  The warm-up outlasts both effects.
    """
    fns = [fn for fn in (ours, theirs) if fn is not None]
    times = [[] for _ in fns]
    per_round = -(-repeats // rounds)
    round_ratios = []  # each round's median ratio: how far the machine moved during the run
    for _ in range(rounds):
        for fn, acc in zip(fns, times):
            end = time.perf_counter() + WARM
            fn()
            while time.perf_counter() < end:
                fn()
            for _ in range(per_round):
                start = time.perf_counter()
                for _ in range(inner):
                    fn()
                acc.append((time.perf_counter() - start) / inner)
        if theirs is not None:
            round_ratios.append(statistics.median(times[0][-per_round:])
                                / statistics.median(times[1][-per_round:]))
    medians = [statistics.median(acc) for acc in times]
    return medians[0], (medians[1] if theirs is not None else None), round_ratios


def _inner_for(fn) -> int:
    """Calls per timing so that one timing lasts at least ~20 ms (after one probe call)."""
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    return max(1, min(200, int(0.02 / max(once, 1e-6))))


def peak_memory_child(lib_name: str, steps: int = 3) -> dict:
    """Run in a fresh process: RSS before and peak RSS during CNN training at batch 256."""
    lib = __import__(lib_name)
    if lib_name == "torch" and os.environ.get("EMBER_BENCH_THREADS"):
        lib.set_num_threads(int(os.environ["EMBER_BENCH_THREADS"]))
    if lib_name == "ember":
        # numba is ember's library as libtorch is PyTorch's: load it before the baseline,
        # as `import torch` loads libtorch (ember imports numba lazily, at its first kernel).
        lib.ops._native.available()
    step = cnn_step(lib, batch=256)
    before = _status_bytes("VmRSS")
    for _ in range(steps):
        step()
    return {"before": before, "peak": _status_bytes("VmHWM")}


def _status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (Linux).

    NOTE: not ``getrusage().ru_maxrss``: Linux keeps that peak across ``exec``, so a child
    would report its parent's peak.  ``VmHWM`` starts afresh with the new program.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status")


MEMORY_RUNS = 3  # fresh processes per library; the one of median growth is reported


def peak_memory(lib_name: str, threads: int) -> dict | None:
    """`peak_memory_child`'s figures from the fresh process of median growth among
    `MEMORY_RUNS`.  NOTE: one process is not enough: PyTorch's growth measured from 219
    to 264 MiB in seven runs of one evening (2026-12-04), ember's 234 MiB in six."""
    env = dict(os.environ, EMBER_BENCH_THREADS=str(threads))
    runs = []
    for _ in range(MEMORY_RUNS):
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child",
                               lib_name], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return None
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    runs.sort(key=lambda r: r["peak"] - r["before"])
    return runs[len(runs) // 2]


def _machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def _blas() -> str:
    import ember

    try:
        from threadpoolctl import threadpool_info

        info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        # NumPy's own first: numba imports SciPy, which brings an OpenBLAS of its own
        info.sort(key=lambda i: "numpy" not in i.get("filepath", ""))
        if info:
            i = info[0]
            return f"{i['internal_api']} {i['version']} ({i.get('architecture')}), " \
                   f"{i['num_threads']} threads (ember's own: {ember.get_num_threads()})"
    except ImportError:
        pass
    return "unknown BLAS (pip install threadpoolctl to show it)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="",
                        help="comma-separated subset of: overhead, mlp, cnn, gpt, lstm, matmul, "
                             "memory, latency")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3,
                        help="turns each library takes per workload (more: steadier ratios "
                             "on a noisy machine)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--no-torch", action="store_true", help="time ember alone")
    parser.add_argument("--compiled", action="store_true",
                        help="run ember's MLP, CNN and GPT steps through ember.compile "
                             "(benchmarks/compile_bench.py also times ember eager)")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(peak_memory_child(args.memory_child)))
        return
    COMPILE["ember"] = args.compiled

    import ember
    from benchmarks._harness import try_import_torch

    threads = args.threads or os.cpu_count()
    torch = None if args.no_torch else try_import_torch()
    if torch is not None:
        torch.set_num_threads(threads)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    wanted = (lambda key: not only or key in only)  # noqa: E731
    rows = []  # (name, unit, ember, torch, target, per-round ratios)

    if wanted("overhead"):
        ours = op_overhead(ember)
        theirs = op_overhead(torch) if torch is not None else {}
        for name, fn in ours.items():
            e, t, spread = alternate(fn, theirs.get(name), args.repeats, inner=50,
                                     rounds=args.rounds)
            rows.append((f"op overhead, {name} (per op)", "us", e / CHAIN * 1e6,
                         t / CHAIN * 1e6 if t else None, OVERHEAD_TARGET.get(name, 1.2),
                         spread))
    if wanted("mlp") and torch is not None:  # the floor under the MLP target
        e, t, spread = alternate(mlp_numpy_step(), mlp_step(torch), args.repeats,
                                 rounds=args.rounds)
        rows.append(("MLP step, hand-written NumPy (reference)", "ms", e * 1e3, t * 1e3, None,
                     spread))
    for key, name, build, target in STEPS:
        if not wanted(key):
            continue
        ours = build(ember)
        theirs = build(torch) if torch is not None else None
        inner = _inner_for(ours) if key in ("latency",) else 1
        e, t, spread = alternate(ours, theirs, args.repeats, inner, rounds=args.rounds)
        if args.compiled and key in COMPILED_TARGET:
            name, target = f"{name}, compiled", COMPILED_TARGET[key]
        rows.append((name, "ms", e * 1e3, t * 1e3 if t else None, target, spread))
    if wanted("memory"):
        e = peak_memory("ember", threads)
        t = peak_memory("torch", threads) if torch is not None else None
        if e is not None:
            mib = 2 ** 20
            rows.append(("CNN training batch 256: peak RSS growth", "MiB",
                         (e["peak"] - e["before"]) / mib,
                         (t["peak"] - t["before"]) / mib if t else None, MEMORY_TARGET, []))
            rows.append(("CNN training batch 256: peak RSS (process)", "MiB", e["peak"] / mib,
                         t["peak"] / mib if t else None, None, []))

    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(f"ember vs PyTorch {torch.__version__ if torch else '(not installed)'}, {stamp}; "
          f"{_machine()}; {threads} threads; NumPy {np.__version__}, {_blas()}; "
          f"median of {args.repeats} alternated runs")
    print(f"| {'workload':<52} | {'unit':>4} | {'ember':>9} | {'PyTorch':>9} | {'ratio':>5} "
          f"| {'rounds':>9} | {'target':>7} |")
    print(f"|{'-' * 54}|{'-' * 6}|{'-' * 11}|{'-' * 11}|{'-' * 7}|{'-' * 11}|{'-' * 9}|")
    results = []
    for name, unit, e, t, target, spread in rows:
        ratio = e / t if t else None
        met = "" if ratio is None or target is None else (" ok" if ratio <= target else " !")
        rounds = f"{min(spread):.2f}-{max(spread):.2f}" if spread else "-"
        print(f"| {name:<52} | {unit:>4} | {e:9.2f} | "
              f"{(f'{t:9.2f}' if t else '-'):>9} | {(f'{ratio:5.2f}' if ratio else '-'):>5} | "
              f"{rounds:>9} | {(f'{target:g}' + met if target else ''):>7} |")
        results.append({"workload": name, "unit": unit, "ember": e, "torch": t, "ratio": ratio,
                        "round_ratios": spread, "target": target})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": stamp, "machine": _machine(), "threads": threads,
                       "numpy": np.__version__, "blas": _blas(),
                       "torch": torch.__version__ if torch else None,
                       "repeats": args.repeats, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
