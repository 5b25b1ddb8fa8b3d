"""Draw the autograd graph of the classic MNIST CNN with ember.viz.make_dot.

    python examples/visualize.py [output-path-without-extension]

Writes ``mnist_cnn_graph.png`` (needs the graphviz Python package and Graphviz's
`dot` program: ``pip install 'ember[viz]'`` and ``apt-get install graphviz``).
Without `dot` it writes the DOT text (``.dot``) and says how to render it.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember import nn  # noqa: E402
from ember.viz import dot_available, make_dot  # noqa: E402


class Net(nn.Module):
    """The PyTorch MNIST example's network: two convolutions, max-pooling, two linears."""

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
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "mnist_cnn_graph"
    ember.manual_seed(0)
    model = Net()
    out = model(ember.randn(1, 1, 28, 28))
    dot = make_dot(out, params=dict(model.named_parameters()), show_saved=True)
    if dot_available():
        written = dot.render(path, format="png", cleanup=True)
        print(f"wrote {written}")
    else:
        with open(path + ".dot", "w", encoding="utf-8") as f:
            f.write(dot.source)
        print(f"Graphviz's `dot` program is not installed: wrote {path}.dot instead "
              f"(apt-get install graphviz, then: dot -Tpng {path}.dot -o {path}.png)")


if __name__ == "__main__":
    main()
