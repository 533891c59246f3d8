"""A tiny random Idefics3 as GGUF files (text model + mmproj image encoder) for a real llama.cpp
server, built offline with llama.cpp's own converter.

``llama-cpp-python[server]`` (extra ``perceptbench[llamacpp]``) serves a GGUF text model plus an
``mmproj`` GGUF image encoder behind an OpenAI-compatible ``/v1/chat/completions`` that accepts
``image_url`` parts and returns ``top_logprobs``: a real local server for the VSI API route.
This module builds the model it serves:

1. :func:`perceptbench.testing.tiny_vlm.build_tiny_idefics3` with ``"\\n\\n"`` in the BPE
   training corpus (llama.cpp's Idefics3 image wrapper looks ``"\\n\\n"`` up as one token,
   ``tools/mtmd/mtmd.cpp``);
2. ``convert_hf_to_gguf.py`` of the llama.cpp tree vendored in the llama-cpp-python source
   distribution, run in a subprocess twice (text model; ``--mmproj``), ``--outtype f32``.

The converter ships only in the source distribution (the installed package has no
``convert_hf_to_gguf.py``), so :func:`fetch_converter` extracts ``convert_hf_to_gguf.py``,
``conversion/`` and ``gguf-py/`` from the sdist of the installed llama-cpp-python version
(``pip download --no-binary :all: --no-deps``) into :func:`default_converter_dir`;
``python -m perceptbench.testing.tiny_gguf fetch-converter`` does it from the shell (``.ci/run``
calls it).  ``PERCEPTBENCH_LLAMA_CPP_DIR`` names another llama.cpp tree.

Two converter classes are subclassed for the in-process tokenizer, nothing else changes:
the converter identifies a BPE pre-tokenizer by the hash of its tokenization of a fixed text
and knows only released tokenizers' hashes, so the subclass names ``"gpt-2"`` (the tokenizer is
byte-level BPE with GPT-2's split regex, ``tokenizers.pre_tokenizers.ByteLevel(use_regex=True)``,
which is what llama.cpp's ``gpt-2`` pre-tokenizer implements; checked in ``tokenizer.json``
before converting); and the Llama vocabulary is written by the converter's GPT-2 BPE path
(``_set_vocab_gpt2``), where its sentencepiece-first fallback chain ends for a ``tokenizer.json``
BPE anyway (without requiring the ``sentencepiece`` package).

Requires torch, transformers and tokenizers (the ``models`` extra) and the llama.cpp tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

__all__ = [
    "LLAMA_CPP_DIR_ENV",
    "GGUF_MODEL_ALIAS",
    "default_converter_dir",
    "find_converter",
    "fetch_converter",
    "convert_to_gguf",
    "build_tiny_idefics3_gguf",
]

LLAMA_CPP_DIR_ENV = "PERCEPTBENCH_LLAMA_CPP_DIR"
"""Environment variable naming a llama.cpp source tree with ``convert_hf_to_gguf.py``."""

GGUF_MODEL_ALIAS = "tiny-idefics3"

_DOUBLE_NEWLINE_CORPUS = ("\n\n",) * 64
"""Extra BPE training lines so that ``"\\n\\n"`` becomes one token (llama.cpp mtmd, Idefics3)."""

_CONVERTER_PARTS = ("convert_hf_to_gguf.py", "conversion", "gguf-py", "LICENSE")

# Runs in a subprocess: argv = llama.cpp dir, HF model dir, output dir.
_DRIVER = r'''
import json, sys
from pathlib import Path
ll, model, out = sys.argv[1:4]
sys.path[:0] = [ll, ll + "/gguf-py"]
tj = json.loads((Path(model) / "tokenizer.json").read_text())
pre = tj.get("pre_tokenizer") or {}
if not (tj["model"]["type"] == "BPE" and pre.get("type") == "ByteLevel" and pre.get("use_regex", True)):
    sys.exit(f"{model}/tokenizer.json is not a byte-level BPE with GPT-2's split regex: {pre}")
from conversion import ModelType, get_model_class
from conversion.base import ModelBase
Llama = get_model_class("LlamaForCausalLM")
class TinyBPELlama(Llama):
    model_arch = Llama.model_arch
    def get_vocab_base_pre(self, tokenizer):
        return "gpt-2"
    def set_vocab(self):
        self._set_vocab_gpt2()
ModelBase._model_classes[ModelType.TEXT]["LlamaForCausalLM"] = TinyBPELlama
import convert_hf_to_gguf as c
for extra, name in (([], "model.gguf"), (["--mmproj"], "mmproj.gguf")):
    sys.argv = ["convert_hf_to_gguf.py", model, "--outtype", "f32", "--outfile", str(Path(out) / name), *extra]
    c.main()
'''


def default_converter_dir() -> Path:
    """``{sys.prefix}/share/perceptbench/llama.cpp``: where :func:`fetch_converter` puts the tree."""
    return Path(sys.prefix) / "share" / "perceptbench" / "llama.cpp"


def find_converter() -> Path:
    """The llama.cpp tree holding ``convert_hf_to_gguf.py`` (``$PERCEPTBENCH_LLAMA_CPP_DIR``, else
    :func:`default_converter_dir`).

    Raises ``FileNotFoundError`` naming the directory looked at and the command that fetches it.
    """
    d = Path(os.environ.get(LLAMA_CPP_DIR_ENV) or default_converter_dir())
    missing = [p for p in _CONVERTER_PARTS[:3] if not (d / p).exists()]
    if missing:
        raise FileNotFoundError(
            f"llama.cpp's GGUF converter is not at {d} (missing {', '.join(missing)}); fetch it from the "
            "llama-cpp-python source distribution with `python -m perceptbench.testing.tiny_gguf fetch-converter` "
            f"or point {LLAMA_CPP_DIR_ENV} at a llama.cpp checkout")
    return d


def fetch_converter(dest: str | os.PathLike | None = None, version: str | None = None) -> Path:
    """Extract llama.cpp's converter from the llama-cpp-python sdist into ``dest``.

    ``version`` defaults to the installed llama-cpp-python's (the converter then matches the
    compiled library).  Downloads the sdist with ``pip download --no-binary :all: --no-deps``
    (a package registry, about 77 MB for 0.3.36).  Returns ``dest``.  Raises ``RuntimeError``
    when llama-cpp-python is not installed and no version is given, or pip fails.
    """
    from importlib import metadata

    if version is None:
        try:
            version = metadata.version("llama-cpp-python")
        except metadata.PackageNotFoundError:
            raise RuntimeError("llama-cpp-python is not installed: pip install 'perceptbench[llamacpp]' "
                               "(compiles llama.cpp, several minutes)") from None
    dest = Path(dest or default_converter_dir())
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
                            f"llama-cpp-python=={version}", "-d", tmp], capture_output=True, text=True)
        sdists = sorted(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        if p.returncode or not sdists:
            raise RuntimeError(f"pip download llama-cpp-python=={version} failed: {p.stderr.strip()[-500:]}")
        prefix = f"{sdists[0].name[:-len('.tar.gz')]}/vendor/llama.cpp/"
        staging = Path(tmp) / "tree"
        with tarfile.open(sdists[0]) as tf:
            members = [m for m in tf.getmembers() if m.name.startswith(prefix)
                       and m.name[len(prefix):].split("/")[0] in _CONVERTER_PARTS and (m.isfile() or m.isdir())]
            for m in members:
                m.name = m.name[len(prefix):]
            tf.extractall(staging, members=members, filter="data")
        (staging / "LLAMA_CPP_PYTHON_VERSION").write_text(version + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), dest)
    return dest


def convert_to_gguf(model_dir: str | os.PathLike, out_dir: str | os.PathLike,
                    converter: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """Convert an HF Idefics3 directory to ``out_dir/model.gguf`` and ``out_dir/mmproj.gguf`` (f32).

    Runs llama.cpp's ``convert_hf_to_gguf.py`` (``converter``: the llama.cpp tree, default
    :func:`find_converter`) in a subprocess.  Raises ``RuntimeError`` with the converter's last
    output lines when it fails.
    """
    ll = Path(converter) if converter else find_converter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-c", _DRIVER, str(ll), str(model_dir), str(out)],
                       capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    files = (out / "model.gguf", out / "mmproj.gguf")
    if p.returncode or not all(f.is_file() for f in files):
        raise RuntimeError(f"convert_hf_to_gguf.py ({ll}) failed on {model_dir}:\n{(p.stdout + p.stderr)[-3000:]}")
    return files


def _fingerprint(converter: Path, seed: int) -> str:
    h = hashlib.sha256()
    for f in (Path(__file__).with_name("tiny_vlm.py"), Path(__file__), converter / "convert_hf_to_gguf.py"):
        h.update(f.read_bytes())
    v = converter / "LLAMA_CPP_PYTHON_VERSION"
    h.update(v.read_bytes() if v.is_file() else b"")
    h.update(str(seed).encode())
    return h.hexdigest()[:16]


def build_tiny_idefics3_gguf(directory: str | os.PathLike, seed: int = 0,
                             converter: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """Build the tiny Idefics3 (``seed``) and its GGUF files under ``directory``; returns
    ``(model.gguf, mmproj.gguf)``.

    Cached: a ``fingerprint.json`` (hash of the builder sources, the converter script and its
    llama-cpp-python version, and the seed) beside the files; a directory whose fingerprint
    matches is returned without rebuilding.  Raises ``FileNotFoundError`` (no converter) or
    ``RuntimeError`` (conversion failed).
    """
    from .tiny_vlm import build_tiny_idefics3

    ll = Path(converter) if converter else find_converter()
    d = Path(directory)
    fp = {"fingerprint": _fingerprint(ll, seed)}
    stamp = d / "fingerprint.json"
    files = (d / "model.gguf", d / "mmproj.gguf")
    if stamp.is_file() and json.loads(stamp.read_text()) == fp and all(f.is_file() for f in files):
        return files
    if d.exists():
        shutil.rmtree(d)
    hf = build_tiny_idefics3(d / "hf", seed=seed, tokenizer_extra_corpus=_DOUBLE_NEWLINE_CORPUS)
    files = convert_to_gguf(hf, d, ll)
    stamp.write_text(json.dumps(fp))
    return files


def _main(argv: list[str]) -> int:
    if argv[:1] == ["fetch-converter"] and len(argv) <= 2:
        print(fetch_converter(argv[1] if len(argv) == 2 else None))
        return 0
    if argv[:1] == ["build"] and len(argv) == 2:
        print(*build_tiny_idefics3_gguf(argv[1]))
        return 0
    print("usage: python -m perceptbench.testing.tiny_gguf fetch-converter [DEST] | build DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
