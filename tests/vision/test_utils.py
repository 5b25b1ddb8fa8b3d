"""make_grid's layout and normalization, and save_image's PNG files."""

import struct
import zlib

import numpy as np
import pytest

import ember
from ember.vision.utils import make_grid, save_image


def constant_images(*levels, size=2):
    return ember.stack([ember.full((1, size, size), float(v)) for v in levels])


def test_make_grid_layout():
    grid = make_grid(constant_images(1, 2, 3), nrow=2, padding=1, pad_value=9)
    assert tuple(grid.shape) == (3, 7, 7)             # 1-channel images become RGB
    g = grid.numpy()
    np.testing.assert_array_equal(g[0], g[2])
    expected = np.full((7, 7), 9.0, np.float32)
    expected[1:3, 1:3], expected[1:3, 4:6], expected[4:6, 1:3] = 1, 2, 3
    np.testing.assert_array_equal(g[0], expected)
    row = make_grid(constant_images(1, 2, 3), nrow=8, padding=0)
    assert tuple(row.shape) == (3, 2, 6) and row[0, 0].tolist() == [1, 1, 2, 2, 3, 3]
    as_list = make_grid([ember.ones(3, 2, 2), ember.zeros(3, 2, 2)], padding=1)
    assert tuple(as_list.shape) == (3, 4, 7)


def test_make_grid_single_image_and_normalize():
    one = ember.tensor([[0.0, 5.0], [10.0, 20.0]])     # (H, W)
    out = make_grid(one, normalize=True)
    assert tuple(out.shape) == (3, 2, 2)              # no padding around a single image
    assert out[0].tolist() == [[0.0, 0.25], [0.5, 1.0]]
    clipped = make_grid(one, normalize=True, value_range=(0.0, 10.0))
    assert clipped[0].tolist() == [[0.0, 0.5], [1.0, 1.0]]
    pair = ember.stack([ember.tensor([[[0.0, 2.0]]]), ember.tensor([[[0.0, 4.0]]])])
    each = make_grid(pair, padding=0, normalize=True, scale_each=True)
    assert each[0].tolist() == [[0.0, 1.0, 0.0, 1.0]]
    together = make_grid(pair, padding=0, normalize=True)
    assert together[0].tolist() == [[0.0, 0.5, 0.0, 1.0]]
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        make_grid(one, normalize=True, value_range=[0, 1])


def read_png(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and b"IEND" in chunks
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8)
    rows = rows.reshape(height, 1 + width * channels)
    assert not rows[:, 0].any()                        # filter type 0
    return rows[:, 1:].reshape(height, width, channels)


def test_save_image_writes_png(tmp_path):
    images = ember.stack([ember.full((3, 2, 2), 0.5), ember.ones(3, 2, 2)])
    path = tmp_path / "grid.png"
    save_image(images, path, nrow=2, padding=1, pad_value=0.0)
    pixels = read_png(path.read_bytes())
    assert pixels.shape == (4, 7, 3)
    assert pixels[1, 1].tolist() == [128] * 3 and pixels[1, 4].tolist() == [255] * 3
    assert pixels[0, 0].tolist() == [0, 0, 0]
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as img:
        np.testing.assert_array_equal(np.asarray(img), pixels)


def test_save_image_file_object_and_other_formats(tmp_path):
    import io

    buffer = io.BytesIO()
    save_image(ember.tensor([[[0.0, 1.0]]]), buffer)
    assert read_png(buffer.getvalue())[0, :, 0].tolist() == [0, 255]
    pytest.importorskip("PIL")
    save_image(ember.rand(3, 4, 4), tmp_path / "x.jpg")
    assert (tmp_path / "x.jpg").read_bytes()[:2] == b"\xff\xd8"
