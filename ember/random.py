"""Random numbers: generators per device, seeding, and the sampling functions.

A CPU `Generator` wraps NumPy's PCG64 bit generator: the same seed gives the same
numbers on every run and every machine (not PyTorch's numbers: its streams differ).
A CUDA generator keeps PyTorch's (seed, offset) form of state: every sampling call
seeds a Philox generator from both and moves the offset on, so its state can be
saved and restored exactly too.  CuPy is only imported when a CUDA generator is
first used.

The samplers (rand, randn, normal, ...) live in ``ember/_sampling.py``; they draw
from the generator of the output's device (``default_generator`` on the CPU) unless
``generator=`` names another one.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from ._core import dtype as dtypes
from ._core.backend import cupy_module
from ._core.device import to_device
from ._core.device import device as Device
from ._core.tensor import Tensor, _make

_DEFAULT_SEED = 67280421310721


def _seed_value(seed) -> int:
    """PyTorch's seed range: [-2**63, 2**64); negative seeds wrap around."""
    if isinstance(seed, Tensor):
        seed = seed.item()
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % (2 ** 64)


class Generator:
    """A source of random numbers on one device, with its own seed and state.

    >>> g = ember.Generator().manual_seed(0)
    >>> ember.rand(2, generator=g).shape
    ember.Size([2])
    """

    def __init__(self, device="cpu"):
        self.device = to_device(device)
        if self.device.type not in ("cpu", "cuda"):
            raise RuntimeError(f"{self.device.type.upper()} device type not an accelerator.")
        self._seed = _DEFAULT_SEED
        self._offset = 0          # CUDA only: sampling calls since seeding
        self._np = None           # CPU: numpy.random.Generator
        self._cupy_state = None   # CUDA: one cupy RandomState, re-seeded per call
        self._reset()

    def __repr__(self) -> str:
        return f"<ember.Generator object on {self.device}>"

    def _reset(self) -> None:
        if self.device.type == "cpu":
            self._np = np.random.Generator(np.random.PCG64(self._seed))
        self._offset = 0

    def manual_seed(self, seed) -> Generator:
        """Seed the generator (an int in [-2**63, 2**64)); returns the generator."""
        self._seed = _seed_value(seed)
        self._reset()
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed used."""
        value = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor (restore it with ``set_state``)."""
        if self.device.type == "cpu":
            st = self._np.bit_generator.state
            words = [self._seed, st["state"]["state"], st["state"]["inc"]]
            raw = (words[0].to_bytes(8, "little") + words[1].to_bytes(16, "little")
                   + words[2].to_bytes(16, "little") + bytes([st["has_uint32"]])
                   + int(st["uinteger"]).to_bytes(4, "little"))
        else:
            raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return _make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state returned by ``get_state``."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not dtypes.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = bytes(new_state.cpu_array().reshape(-1).tolist())
        size = _STATE_SIZES[self.device.type]
        if len(raw) != size:
            raise RuntimeError(f"Expected a {self.device.type.upper()} generator state of size "
                               f"{size} but found the input RNG state size to be {len(raw)}")
        self._seed = int.from_bytes(raw[:8], "little")
        if self.device.type == "cpu":
            self._np = np.random.Generator(np.random.PCG64(self._seed))
            self._np.bit_generator.state = {
                "bit_generator": "PCG64",
                "state": {"state": int.from_bytes(raw[8:24], "little"),
                          "inc": int.from_bytes(raw[24:40], "little")},
                "has_uint32": raw[40],
                "uinteger": int.from_bytes(raw[41:45], "little"),
            }
        else:
            self._offset = int.from_bytes(raw[8:16], "little")
        return self

    # backends ----------------------------------------------------------

    def _source(self):
        """(xp, sampler) for one sampling call."""
        if self.device.type == "cpu":
            return np, _NumpySource(self._np)
        cp = cupy_module()
        with cp.cuda.Device(self.device.index or 0):
            if self._cupy_state is None:
                self._cupy_state = cp.random.RandomState(
                    method=cp.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
            key = np.random.SeedSequence([self._seed, self._offset]).generate_state(1, np.uint64)
            self._cupy_state.seed(int(key[0]))
        self._offset += 1
        return cp, _CupySource(self._cupy_state, cp)


_STATE_SIZES = {"cpu": 45, "cuda": 16}


def _drawn_dtype(np_dtype):
    """The dtype floats are drawn in: float32 or float64 as asked, float32 for any other
    (the generators draw no other float type)."""
    return np_dtype if np_dtype in (np.float32, np.float64) else np.float32


class _NumpySource:
    """The few primitives every sampler is built from, on numpy.random.Generator."""

    def __init__(self, gen):
        self.gen = gen

    def uniform(self, shape, np_dtype):
        """Floats in [0, 1)."""
        return self.gen.random(shape, dtype=_drawn_dtype(np_dtype))

    def normal(self, shape, np_dtype):
        return self.gen.standard_normal(shape, dtype=_drawn_dtype(np_dtype))

    def integers(self, low, high, shape):
        """Integers in [low, high] (both included)."""
        return self.gen.integers(low, high, size=shape, dtype=np.int64, endpoint=True)

    def permutation(self, n):
        return self.gen.permutation(n)

    def poisson(self, lam):
        return self.gen.poisson(lam)


class _CupySource:
    def __init__(self, state, cp):
        self.state, self.cp = state, cp

    def uniform(self, shape, np_dtype):
        return self.state.random_sample(shape, dtype=_drawn_dtype(np_dtype))

    def normal(self, shape, np_dtype):
        return self.state.standard_normal(shape, dtype=_drawn_dtype(np_dtype))

    def integers(self, low, high, shape):
        if high - low < 2 ** 62:
            return self.state.randint(low, high + 1, size=shape, dtype=np.int64)
        # a near-full int64 range: 63 random bits from two draws, folded into the range
        top = self.state.randint(0, 2 ** 31, size=shape, dtype=np.int64)
        bottom = self.state.randint(0, 2 ** 32, size=shape, dtype=np.int64)
        bits = (top << 32) | bottom
        return low + bits % (high - low + 1) if high - low + 1 < 2 ** 63 else low + bits

    def permutation(self, n):
        return self.state.permutation(n)

    def poisson(self, lam):
        return self.state.poisson(lam, dtype=np.int64)


# ---------------------------------------------------------------------------
# default generators and global seeding

default_generator = Generator("cpu")
default_generator.seed()
_cuda_generators: dict = {}


def default_cuda_generator(index: int = 0) -> Generator:
    """The default generator of CUDA device `index` (made, and seeded, on first use)."""
    gen = _cuda_generators.get(index)
    if gen is None:
        gen = Generator(Device("cuda", index))
        gen.manual_seed(default_generator.initial_seed())
        _cuda_generators[index] = gen
    return gen


def manual_seed(seed) -> Generator:
    """Seed the default CPU generator and every CUDA generator (also those made later)."""
    default_generator.manual_seed(seed)
    for gen in _cuda_generators.values():
        gen.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed all default generators from the OS's entropy; returns the seed."""
    value = default_generator.seed()
    for gen in _cuda_generators.values():
        gen.manual_seed(value)
    return value


def initial_seed() -> int:
    """The seed of the default CPU generator."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default CPU generator's state, a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default CPU generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda"):
    """A context in which random numbers may be drawn without changing the generators'
    states outside it: the CPU state (and that of the listed CUDA devices, by default
    every one in use) is restored on exit."""
    if not enabled:
        yield
        return
    indices = sorted(_cuda_generators) if devices is None else [
        to_device(d).index or 0 if not isinstance(d, int) else d for d in devices]
    cpu_state = default_generator.get_state()
    cuda_states = {i: default_cuda_generator(i).get_state() for i in indices}
    try:
        yield
    finally:
        default_generator.set_state(cpu_state)
        for i, state in cuda_states.items():
            default_cuda_generator(i).set_state(state)


def _generator_for(dev, generator) -> Generator:
    """The generator to draw from for an output on `dev`."""
    if generator is None:
        if dev.type == "cpu":
            return default_generator
        return default_cuda_generator(dev.index or 0)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember.Generator, not {type(generator).__name__}")
    if generator.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


__all__ = [
    "Generator", "default_cuda_generator", "default_generator", "fork_rng", "get_rng_state",
    "initial_seed", "manual_seed", "seed", "set_rng_state",
]
