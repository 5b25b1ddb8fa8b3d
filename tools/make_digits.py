"""Build ``ember/vision/datasets/data/digits.npz``, the bundled 8x8 handwritten digits.

The source is ``digits.csv.gz`` (1,797 rows: 64 pixel counts 0..16, then the label 0..9):
the test set of the UCI "Optical Recognition of Handwritten Digits" data set (Alpaydin &
Kaynak, 1998; CC BY 4.0), as shipped by scikit-learn.  The output holds

- ``images``: uint8, shape (1797, 8, 8), the pixel counts 0..16 unchanged;
- ``labels``: int64, shape (1797,).

Run once from the repository root (the default source is the team's shared copy):

    python tools/make_digits.py [path/to/digits.csv.gz]
"""

from __future__ import annotations

import hashlib
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SOURCE = os.path.join(ROOT, "..", "shared", "data", "digits", "digits.csv.gz")
TARGET = os.path.join(ROOT, "ember", "vision", "datasets", "data", "digits.npz")
SOURCE_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"


def main(source: str = DEFAULT_SOURCE) -> None:
    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != SOURCE_SHA256:
        sys.exit(f"{source}: sha256 {digest} is not the expected {SOURCE_SHA256}")
    table = np.loadtxt(source, delimiter=",")
    if table.shape != (1797, 65):
        sys.exit(f"{source}: expected 1797 rows of 65 numbers, got {table.shape}")
    pixels, labels = table[:, :64], table[:, 64]
    if pixels.min() < 0 or pixels.max() > 16 or np.any(pixels != np.round(pixels)):
        sys.exit(f"{source}: pixel counts must be integers in 0..16")
    images = pixels.astype(np.uint8).reshape(-1, 8, 8)
    labels = labels.astype(np.int64)
    os.makedirs(os.path.dirname(TARGET), exist_ok=True)
    np.savez_compressed(TARGET, images=images, labels=labels)
    print(f"wrote {TARGET}: images {images.shape} {images.dtype}, labels {labels.shape}, "
          f"class counts {np.bincount(labels).tolist()}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
