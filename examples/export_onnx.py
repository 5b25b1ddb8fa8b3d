"""Export the classic MNIST CNN to ONNX and run it with onnxruntime.

    pip install 'ember[onnx]'        # onnx and onnxruntime
    python examples/export_onnx.py [mnist_cnn.onnx]

The model is traced once with a batch of 2 images; the batch dim is declared dynamic, so
the file then runs any batch size.  The script checks the file with onnx.checker, runs
it in onnxruntime on batches of 1 and 16 and compares with ember's own outputs.
"""

import sys

import numpy as np

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


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
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def main(path: str = "mnist_cnn.onnx") -> float:
    import onnx
    import onnxruntime

    torch.manual_seed(0)
    model = Net().eval()

    torch.onnx.export(model, torch.randn(2, 1, 28, 28), path,
                      input_names=["image"], output_names=["log_probs"],
                      dynamic_axes={"image": {0: "batch"}, "log_probs": {0: "batch"}})

    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    print(f"wrote {path}: {len(proto.graph.node)} nodes "
          f"({', '.join(n.op_type for n in proto.graph.node)})")

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst = 0.0
    for batch in (1, 16):
        images = torch.randn(batch, 1, 28, 28)
        expected = model(images).detach().numpy()
        (got,) = session.run(None, {"image": images.numpy()})
        diff = float(np.abs(got - expected).max())
        worst = max(worst, diff)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        print(f"batch {batch:2d}: onnxruntime matches ember (max abs difference {diff:.2e})")
    return worst


if __name__ == "__main__":
    main(*sys.argv[1:])
