"""Fit y = 3x + 2 with autograd and a hand-written SGD loop.

    python examples/fit_line.py

It prints the learned slope and intercept (close to 3 and 2).
"""

import ember as torch


def main(steps: int = 300, lr: float = 0.1) -> tuple:
    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 200).unsqueeze(1)
    y = 3 * x + 2 + 0.1 * torch.randn(x.shape)

    w = torch.zeros(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for step in range(steps):
        loss = ((x * w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
        if step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.5f}")
    print(f"learned: y = {w.item():.3f} x + {b.item():.3f}   (true: y = 3x + 2)")
    return w.item(), b.item()


if __name__ == "__main__":
    main()
