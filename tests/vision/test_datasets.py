"""The data set readers, on small files written here in each real format, and on the real
MNIST test files when the shared data folder is present."""

import gzip
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms
from ember.vision.datasets.digits import split_mask

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def check_image(img, shape, mode) -> np.ndarray:
    """A sample image is what torchvision gives, a PIL image (a NumPy array without
    Pillow): its pixels as an array."""
    try:
        from PIL import Image
    except ImportError:
        assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == shape
        return img
    assert isinstance(img, Image.Image) and img.mode == mode
    assert img.size == (shape[1], shape[0])
    return np.asarray(img)


def write_idx(path: Path, array: np.ndarray, gz: bool) -> None:
    codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float32): 0x0D}
    header = bytes([0, 0, codes[array.dtype], array.ndim])
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def make_mnist(root: Path, folder: str, gz: bool, n_train=5, n_test=3, prefix=("train", "t10k"),
               stem="{p}-{kind}-ubyte"):
    rng = np.random.default_rng(0)
    raw = root / folder / "raw"
    made = {}
    for p, n in zip(prefix, (n_train, n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        write_idx(raw / stem.format(p=p, kind="images-idx3"), images, gz)
        write_idx(raw / stem.format(p=p, kind="labels-idx1"), labels, gz)
        made[p] = (images, labels)
    return made


# -- MNIST family ------------------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cls", [datasets.MNIST, datasets.FashionMNIST, datasets.KMNIST])
def test_mnist_family_reads_idx(tmp_path, cls, gz):
    made = make_mnist(tmp_path, cls.__name__, gz)
    for train, key in ((True, "train"), (False, "t10k")):
        ds = cls(str(tmp_path), train=train, download=True)
        images, labels = made[key]
        assert len(ds) == len(labels)
        assert ds.data.dtype is ember.uint8 and tuple(ds.data.shape) == images.shape
        assert ds.targets.dtype is ember.int64
        np.testing.assert_array_equal(ds.data.numpy(), images)
        img, target = ds[1]
        np.testing.assert_array_equal(check_image(img, (28, 28), "L"), images[1])
        assert type(target) is int and target == labels[1]
    assert len(ds.classes) == 10 and ds.class_to_idx[ds.classes[3]] == 3
    assert "Split: Test" in repr(ds)


def test_mnist_transforms_applied(tmp_path):
    made = make_mnist(tmp_path, "MNIST", gz=True)
    ds = datasets.MNIST(tmp_path, transform=transforms.ToTensor(),
                        target_transform=lambda t: t + 100)
    img, target = ds[0]
    assert tuple(img.shape) == (1, 28, 28) and img.dtype is ember.float32
    np.testing.assert_allclose(img.numpy()[0], made["train"][0][0] / 255, rtol=1e-6)
    assert target == made["train"][1][0] + 100


def test_mnist_missing_files_say_which_and_where(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found") as info:  # as torchvision
        datasets.MNIST(tmp_path, train=True, download=True)
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, datasets.DatasetNotFoundError)
    message = str(info.value)
    assert "train-images-idx3-ubyte" in message
    assert str(tmp_path / "MNIST" / "raw") in message
    assert "never downloads" in message


def test_emnist_split_files_and_classes(tmp_path):
    made = make_mnist(tmp_path, "EMNIST", gz=False, prefix=("train", "test"),
                      stem="emnist-letters-{p}-{kind}-ubyte")
    ds = datasets.EMNIST(tmp_path, split="letters", train=False)
    np.testing.assert_array_equal(ds.data.numpy(), made["test"][0])
    assert ds.classes[0] == "N/A" and ds.classes[1] == "a" and len(ds.classes) == 27
    assert len(datasets.EMNIST.classes_split_dict["byclass"]) == 62
    assert len(datasets.EMNIST.classes_split_dict["balanced"]) == 47
    with pytest.raises(ValueError, match="Unknown value 'nope' for argument split"):
        datasets.EMNIST(tmp_path, split="nope")


def test_read_idx_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match="not an IDX file"):
        datasets.read_idx(str(bad))
    short = tmp_path / "short"
    short.write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", 10) + b"\x00" * 3)
    with pytest.raises(ValueError, match="announces"):
        datasets.read_idx(str(short))
    typed = tmp_path / "typed"
    write_idx(typed, np.array([[1.5, -2.0]], dtype=np.float32), gz=False)
    out = datasets.read_idx(str(typed))
    assert out.dtype == np.float32 and out.tolist() == [[1.5, -2.0]]


@pytest.mark.skipif(not (SHARED / "mnist").is_dir(), reason="shared MNIST files not present")
def test_real_mnist_test_set():
    ds = datasets.MNIST(str(SHARED / "mnist"), train=False)
    assert len(ds) == 10000 and tuple(ds.data.shape) == (10000, 28, 28)
    assert ds.targets[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    counts = np.bincount(ds.targets.numpy(), minlength=10).tolist()
    assert counts == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    img, label = ds[0]
    img = check_image(img, (28, 28), "L")
    assert label == 7 and img.max() == 255 and img.min() == 0
    # the digit is drawn in the middle: the border rows are blank
    assert img[:2].sum() == 0 and img[10:20, 10:20].sum() > 0
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        datasets.MNIST(str(SHARED / "mnist"), train=True)  # no training images there


# -- CIFAR -------------------------------------------------------------------------------

def cifar_arrays(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, 10, n).tolist()


def test_cifar10_binary(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    expected_images, expected_labels = [], []
    for i, name in enumerate([f"data_batch_{k}.bin" for k in range(1, 6)] + ["test_batch.bin"]):
        pixels, labels = cifar_arrays(2, i)
        records = np.concatenate([np.array(labels, np.uint8)[:, None], pixels], axis=1)
        (folder / name).write_bytes(records.tobytes())
        expected_images.append(pixels)
        expected_labels += labels
    (folder / "batches.meta.txt").write_text("\n".join(f"c{i}" for i in range(10)) + "\n\n")
    train = datasets.CIFAR10(tmp_path, train=True)
    test = datasets.CIFAR10(tmp_path, train=False)
    assert len(train) == 10 and len(test) == 2
    assert train.data.shape == (10, 32, 32, 3) and train.data.dtype == np.uint8
    assert train.targets == expected_labels[:10] and test.targets == expected_labels[10:]
    assert train.classes == [f"c{i}" for i in range(10)]
    img, label = test[1]
    img = check_image(img, (32, 32, 3), "RGB")
    first = expected_images[5][1]
    # the record holds the red plane, then green, then blue, each row by row
    assert img[0, 0, 0] == first[0] and img[0, 1, 0] == first[1]
    assert img[1, 0, 0] == first[32] and img[0, 0, 1] == first[1024]
    assert img[31, 31, 2] == first[3071]
    assert label == expected_labels[11]


def write_py_batch(path: Path, pixels, labels, **extra):
    entry = {"batch_label": "testing batch", "labels": labels, "data": pixels,
             "filenames": [b"img_%d.png" % i for i in range(len(labels))], **extra}
    path.write_bytes(pickle.dumps(entry, protocol=2))


def test_cifar10_python_version(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for k in range(1, 6):
        write_py_batch(folder / f"data_batch_{k}", *cifar_arrays(3, k))
    pixels, labels = cifar_arrays(4, 9)
    write_py_batch(folder / "test_batch", pixels, labels)
    (folder / "batches.meta").write_bytes(pickle.dumps(
        {"label_names": list("abcdefghij"), "num_vis": 3072}, protocol=2))
    train = datasets.CIFAR10(tmp_path, train=True, transform=transforms.ToTensor())
    test = datasets.CIFAR10(tmp_path, train=False)
    assert len(train) == 15 and len(test) == 4 and train.classes == list("abcdefghij")
    assert test.targets == labels
    np.testing.assert_array_equal(test.data[2], pixels[2].reshape(3, 32, 32).transpose(1, 2, 0))
    img, _ = train[0]
    assert tuple(img.shape) == (3, 32, 32)


def test_cifar_python_batch_references_only_allowed_globals(tmp_path):
    import pickletools

    data = pickle.dumps({"data": np.zeros((2, 3), np.uint8), "labels": [1, 2],
                         "filenames": [b"x"]}, protocol=2)
    refs = {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}
    assert refs <= {"numpy._core.multiarray _reconstruct", "numpy.core.multiarray _reconstruct",
                    "numpy ndarray", "numpy dtype", "_codecs encode"}
    out = datasets.load_array_pickle(data)
    assert out["labels"] == [1, 2] and out["filenames"] == [b"x"]
    assert out["data"].dtype == np.uint8 and out["data"].shape == (2, 3)


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_load_array_pickle_refuses_code(tmp_path):
    with pytest.raises(pickle.UnpicklingError, match="posix.system|os.system|nt.system"):
        datasets.load_array_pickle(pickle.dumps({"data": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="Python objects"):
        datasets.load_array_pickle(pickle.dumps(np.array([{}, 1], dtype=object), protocol=2))
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "test_batch").write_bytes(pickle.dumps({"data": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError):
        datasets.CIFAR10(tmp_path, train=False)
    # protocol 5 keeps arrays out of band of the pickle's opcodes: also readable
    p5 = pickle.dumps({"data": np.arange(6, dtype=np.int16)}, protocol=5)
    assert datasets.load_array_pickle(p5)["data"].tolist() == list(range(6))


def test_cifar100_both_versions(tmp_path):
    py = tmp_path / "py" / "cifar-100-python"
    py.mkdir(parents=True)
    pixels, fine = cifar_arrays(3, 0)
    write_py_batch(py / "test", pixels, [], fine_labels=[50, 60, 99], coarse_labels=[1, 2, 19])
    (py / "meta").write_bytes(pickle.dumps({"fine_label_names": [f"f{i}" for i in range(100)],
                                            "coarse_label_names": ["x"] * 20}, protocol=2))
    ds = datasets.CIFAR100(tmp_path / "py", train=False)
    assert ds.targets == [50, 60, 99] and ds.coarse_targets == [1, 2, 19]
    assert ds.classes[99] == "f99"

    binary = tmp_path / "bin" / "cifar-100-binary"
    binary.mkdir(parents=True)
    records = np.concatenate([np.array([[3, 70], [4, 80]], np.uint8), pixels[:2]], axis=1)
    (binary / "test.bin").write_bytes(records.tobytes())
    ds = datasets.CIFAR100(tmp_path / "bin", train=False)
    assert ds.targets == [70, 80] and ds.coarse_targets == [3, 4] and len(ds.classes) == 100


def test_cifar_missing_folder_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py.*cifar-10-batches-bin"):
        datasets.CIFAR10(tmp_path, download=True)
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.CIFAR10(tmp_path)
    (tmp_path / "cifar-10-batches-bin").mkdir()
    with pytest.raises(FileNotFoundError, match="data_batch_1.bin"):
        datasets.CIFAR10(tmp_path)


# -- folders -----------------------------------------------------------------------------

def test_image_folder(tmp_path):
    image_module = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    for cls, names in (("cat", ["b.png", "a.PNG"]), ("dog", ["sub/c.png", "notes.txt"])):
        for name in names:
            path = tmp_path / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith("txt"):
                path.write_text("not an image")
            else:
                image_module.fromarray(rng.integers(0, 256, (4, 5), dtype=np.uint8)).save(path)
    ds = datasets.ImageFolder(str(tmp_path), transform=transforms.ToTensor())
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    assert [os.path.relpath(p, tmp_path) for p, _ in ds.samples] == [
        os.path.join("cat", "a.PNG"), os.path.join("cat", "b.png"),
        os.path.join("dog", "sub", "c.png")]
    assert ds.targets == [0, 0, 1] and ds.imgs == ds.samples
    img, target = ds[2]
    assert tuple(img.shape) == (3, 4, 5) and target == 1  # converted to RGB
    raw = datasets.ImageFolder(str(tmp_path))[0][0]
    assert raw.mode == "RGB" and raw.size == (5, 4)


def test_dataset_folder_custom_loader_and_errors(tmp_path):
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        np.save(tmp_path / cls / "x.npy", np.full(2, ord(cls)))
    ds = datasets.DatasetFolder(tmp_path, loader=np.load, extensions=(".npy",))
    assert len(ds) == 2 and ds[1][0].tolist() == [98, 98] and ds[1][1] == 1
    only_a = datasets.DatasetFolder(tmp_path, loader=np.load,
                                    is_valid_file=lambda p: os.sep + "a" + os.sep in p,
                                    allow_empty=True)
    assert only_a.targets == [0]
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes b"):
        datasets.DatasetFolder(tmp_path, loader=np.load,
                               is_valid_file=lambda p: os.sep + "a" + os.sep in p)
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        datasets.DatasetFolder(tmp_path, loader=np.load)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.DatasetFolder(empty, loader=np.load, extensions=".npy")


# -- FakeData and the bundled digits ---------------------------------------------------

def test_fake_data_is_deterministic_per_index():
    ds = datasets.FakeData(size=6, image_size=(3, 5, 4), num_classes=3)
    img, target = ds[2]
    img = check_image(img, (5, 4, 3), "RGB")
    assert 0 <= target < 3
    ember.manual_seed(123)
    again, target_again = ds[2]
    np.testing.assert_array_equal(img, np.asarray(again))
    assert target == target_again
    assert not np.array_equal(np.asarray(ds[3][0]), img)
    shifted = datasets.FakeData(size=6, image_size=(3, 5, 4), num_classes=3, random_offset=1)
    np.testing.assert_array_equal(np.asarray(shifted[1][0]), img)
    check_image(datasets.FakeData(2, (1, 3, 3))[0][0], (3, 3), "L")
    assert len(ds) == 6
    with pytest.raises(IndexError):
        ds[6]


def test_digits_bundled_split():
    train, test = datasets.Digits(), datasets.Digits(train=False)
    everything = datasets.Digits(split="all")
    assert (len(train), len(test), len(everything)) == (1442, 355, 1797)
    assert datasets.Digits(split="test").targets.tolist() == test.targets.tolist()
    labels = everything.targets.numpy()
    mask = split_mask(labels)
    assert mask.sum() == 355
    # every fifth image of each class, in file order, is a test image
    for c in range(10):
        where = np.flatnonzero(labels == c)
        assert mask[where].tolist() == [(k % 5) == 4 for k in range(len(where))]
    img, label = train[0]
    check_image(img, (8, 8), "L")
    assert type(label) is int
    values = set(np.unique(everything.data.numpy()).tolist())
    assert values <= {(v * 255 + 8) // 16 for v in range(17)} and max(values) == 255
    assert np.bincount(test.targets.numpy()).min() >= 34
    with pytest.raises(ValueError, match="split"):
        datasets.Digits(split="val")


@pytest.mark.skipif(not (SHARED / "digits").is_dir(), reason="shared digits CSV not present")
def test_digits_match_the_source_csv():
    table = np.loadtxt(SHARED / "digits" / "digits.csv.gz", delimiter=",")
    everything = datasets.Digits(split="all")
    counts = table[:, :64].reshape(-1, 8, 8).astype(np.int64)
    np.testing.assert_array_equal(everything.data.numpy(), (counts * 255 + 8) // 16)
    np.testing.assert_array_equal(everything.targets.numpy(), table[:, 64].astype(np.int64))


def test_digits_custom_root_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"digits.npz.*" + str(tmp_path)):
        datasets.Digits(root=tmp_path)


def test_digits_in_a_dataloader():
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.3,), (0.4,))])
    loader = DataLoader(datasets.Digits(train=False, transform=tf), batch_size=100)
    images, labels = next(iter(loader))
    assert tuple(images.shape) == (100, 1, 8, 8) and images.dtype is ember.float32
    assert labels.dtype is ember.int64 and tuple(labels.shape) == (100,)
    assert sum(len(b[1]) for b in loader) == 355


def test_samples_are_copies():
    ds = datasets.Digits(train=False)
    img, _ = ds[0]
    try:
        img.paste(0, (0, 0, 8, 8))          # a PIL image
    except AttributeError:
        img[:] = 0                          # an array, without Pillow
    assert np.asarray(img).max() == 0 and np.asarray(ds[0][0]).any()


def test_image_folder_without_pillow_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "c").mkdir()
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)
    with pytest.raises(ImportError, match=r"ember\[data\]"):
        datasets.ImageFolder(tmp_path)


# -- torchvision's call forms and image type ---------------------------------------------

def test_torchvision_call_forms(tmp_path):
    make_mnist(tmp_path, "MNIST", gz=True)
    for ds in (datasets.MNIST(str(tmp_path), train=False, download=False),
               datasets.MNIST(root=tmp_path, train=True, transform=None, target_transform=None,
                              download=False),
               datasets.MNIST(tmp_path, True, None, None, False)):
        assert len(ds) in (3, 5)
    fake = datasets.FakeData(size=4, image_size=(3, 6, 5), num_classes=10, transform=None,
                             target_transform=None, random_offset=0)
    positional = datasets.FakeData(4, (3, 6, 5), 10, None, None, 0)
    assert len(fake) == 4
    np.testing.assert_array_equal(np.asarray(fake[1][0]), np.asarray(positional[1][0]))


def test_samples_are_pil_images_as_in_torchvision(tmp_path):
    pytest.importorskip("PIL.Image")
    made = make_mnist(tmp_path, "MNIST", gz=False)
    img, label = datasets.MNIST(tmp_path, train=False)[0]
    assert img.size == (28, 28) and img.mode == "L"          # PIL's (width, height)
    assert tuple(transforms.PILToTensor()(img).shape) == (1, 28, 28)
    np.testing.assert_array_equal(np.asarray(img.convert("RGB"))[:, :, 1], made["t10k"][0][0])
    fake, _ = datasets.FakeData(size=2, image_size=(3, 7, 9))[0]
    assert fake.size == (9, 7) and fake.mode == "RGB"
    loader = DataLoader(datasets.FakeData(size=8, image_size=(3, 4, 4),
                                          transform=transforms.ToTensor()), batch_size=4)
    images, targets = next(iter(loader))
    assert tuple(images.shape) == (4, 3, 4, 4) and targets.dtype is ember.int64


def test_without_pillow_samples_are_arrays(tmp_path, monkeypatch):
    import sys

    make_mnist(tmp_path, "MNIST", gz=False)
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` fails
    img, _ = datasets.MNIST(tmp_path, train=False)[0]
    assert isinstance(img, np.ndarray) and img.shape == (28, 28) and img.flags.writeable
    fake, _ = datasets.FakeData(size=1, image_size=(3, 2, 2))[0]
    assert isinstance(fake, np.ndarray) and fake.shape == (2, 2, 3)
