"""Deterministic random streams and content hashes.

Every random choice in perceptbench draws from :func:`rng_for`, a numpy ``Generator``
(PCG64) seeded by ``SeedSequence([seed, h(key_1), h(key_2), ...])`` where ``h`` is the
first 8 bytes of sha256 of the key's text.  So each (seed, purpose) pair has its own
stream, independent of call order, Python hash randomisation and other tasks.
"""

from __future__ import annotations

import hashlib

import numpy as np
from PIL import Image


def _key_int(key: object) -> int:
    return int.from_bytes(hashlib.sha256(str(key).encode("utf-8")).digest()[:8], "little")


def rng_for(seed: int, *keys: object) -> np.random.Generator:
    """A ``numpy.random.Generator`` for (seed, keys...).  Same inputs, same stream."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), *(_key_int(k) for k in keys)]))


def image_sha256(img: Image.Image) -> str:
    """sha256 (hex) of an image's pixels: ``"{mode}:{width}x{height}:"`` + raw bytes.

    Independent of PNG encoder settings, so a re-rendered stimulus hashes the same.
    """
    h = hashlib.sha256(f"{img.mode}:{img.width}x{img.height}:".encode())
    h.update(img.tobytes())
    return h.hexdigest()


def file_sha256(path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_hash(text: str, n: int = 8) -> str:
    """First ``n`` hex digits of sha256(text, UTF-8): the record's ``prompt_hash``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]
