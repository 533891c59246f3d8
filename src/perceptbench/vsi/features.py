"""The VSI feature store: the encoder-LLM probe features, written at run time and read at
scoring time (seed 002 §2.4, appendix A), writer and reader in one module so the file layout
is spelled once.

Written by the VSI respondent after a VSI task x model: the clean and perturbed image of every sample go
through the model's own vision tower (:meth:`perceptbench.models.vlm_hf.HFVLM.vision_features`)
and, once per task, through the frozen witness encoder (``embed``; :func:`default_witness`: a CLIP
model when one is in the local hub cache, the seed's choice, else the embedded efficientnet-lite0).  The
features are written beside the records (``<run>/features/``) so that scoring, which reads them
with numpy only (:class:`ProbeFeatures`), never needs torch.

Layout: ``<run>/features/<slug(model@task_id)>.npz`` (arrays ``sample_id, image_id,
perturbation, sigma, clean, perturbed``, float32 features) with a ``<slug>.json`` sidecar
(model, model_version, hook, feature dim, sha256 of the npz, and for a VLM ``vision_tower``: which
tower and tokens the features are); the witness's features under the key ``witness:NAME@task_id``
(``witness:efficientnet-lite0@...`` or ``witness:openai/clip-vit-base-patch32@...``), the name
saying which witness was used.  A model without an accessible vision tower gets
``<slug>.json`` with ``"skipped": reason`` and no npz.  Scoring refits the probe from these
(deterministic), so re-scoring gives identical numbers.  Module-level imports are numpy and the
run directory only: the model code is imported inside the writer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..core.rundir import write_atomic

WITNESS = "witness:efficientnet-lite0"
"""Model part of the store key of the offline default witness's features (the embedded encoder)."""

WITNESS_CLIP = "openai/clip-vit-base-patch32"
"""The CLIP witness used when it is in the local hub cache (seed 002 appendix A: "a frozen external
CLIP probe provides an image-only reference witness"; the seed names no checkpoint, this is the
original OpenAI ViT-B/32).  A local model directory is accepted too (tests)."""


def witness_key(name: str) -> str:
    """Model part of the store key of a witness named ``name``: ``witness:NAME``."""
    return f"witness:{name}"


def default_witness(clip: str | os.PathLike | None = None):
    """The frozen external witness encoder: the CLIP model ``clip`` (default :data:`WITNESS_CLIP`)
    when it is a local directory or already in the local hub cache (nothing is downloaded), else the
    embedded efficientnet-lite0 (offline default).  Its ``name`` is what the store key and the probe
    rows' notes say.  Raises ``ModelLoadError`` when neither loads."""
    from ..models.default import EfficientNetLiteEncoder

    clip = str(clip or WITNESS_CLIP)
    if Path(clip).is_dir() or _in_hub_cache(clip):
        from ..models.base import ModelLoadError
        from ..models.encoders_hf import HFEncoder

        try:
            return HFEncoder(clip, name=Path(clip).name if Path(clip).is_dir() else clip)
        except ModelLoadError:
            pass  # an incomplete cache entry: the offline default
    return EfficientNetLiteEncoder()


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - the model extra brings it
        return False
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a repo id
        return False


def store_key(model: str, task_id: str) -> str:
    """Key of one (model, task) feature file: ``model@task_id``."""
    return f"{model}@{task_id}"


def slug(name: str, max_len: int = 120) -> str:
    """File-name-safe form of a store key: other characters become ``_``; a key longer than
    ``max_len`` (task ids can hold paths) keeps its first ``max_len - 17`` characters plus ``-``
    and the first 16 hex digits of its sha256, so names stay unique and under file-system limits."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    if len(s) > max_len:
        s = s[: max_len - 17] + "-" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return s


@dataclass(frozen=True)
class ProbeItem:
    """One sample's two views for feature extraction: ``clean()`` and ``perturbed()`` return
    PIL images (loaded lazily)."""

    sample_id: str
    image_id: str
    perturbation: str
    sigma: float
    clean: Callable
    perturbed: Callable


def cache_probe_features(model, items: Sequence[ProbeItem], directory: str | os.PathLike, *,
                         key: str | None = None, batch: int = 16) -> Path:
    """Extract and store clean/perturbed features of ``items`` for ``model``.

    ``model``: a :class:`~perceptbench.models.base.VisionFeatures` (the ``hf:`` VLM adapter) or an
    :class:`~perceptbench.models.base.Encoder` (the witness encoder; pass its ``witness:NAME@task`` key), usually
    behind the response cache (:func:`cache_task_features`).  Writes
    ``<directory>/<slug(key)>.npz`` and ``.json`` (see the module docstring); a model with
    neither method, or whose tower is unreachable (``VisionTowerUnavailable``), gets a
    ``.json`` with ``"skipped"`` and no features.  An existing npz holding every item is kept
    (resume).  Returns the json path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = key or model.name
    base = directory / slug(key)
    meta_path = base.with_name(base.name + ".json")
    npz_path = base.with_name(base.name + ".npz")
    want = {(it.sample_id, it.perturbation, float(it.sigma)) for it in items}
    if npz_path.exists() and meta_path.exists():
        with np.load(npz_path) as z:
            have = set(zip(z["sample_id"].tolist(), z["perturbation"].tolist(), z["sigma"].astype(float).tolist()))
        if want <= have:
            return meta_path
    from ..models.base import Encoder, VisionFeatures

    hook = "vision_features" if isinstance(model, VisionFeatures) else "embed" if isinstance(model, Encoder) else None
    meta = {"key": key, "model_version": getattr(model, "model_version", ""), "n": len(items)}  # "" : none declared
    if hook is None:
        meta["skipped"] = f"{type(model).__name__} exposes no vision tower (no vision_features / embed)"
        write_atomic(meta_path, json.dumps(meta, indent=1).encode())
        return meta_path
    from ..models.base import ModelLoadError

    fn = model.vision_features if hook == "vision_features" else model.embed
    source = getattr(getattr(model, "inner", model), "vision_feature_source", None)  # the cache wrapper's model
    clean, pert = [], []
    try:
        if hook == "vision_features" and callable(source):
            meta["vision_tower"] = source()
        for i in range(0, len(items), batch):
            chunk = items[i:i + batch]
            clean.append(np.asarray(fn([it.clean() for it in chunk]), np.float32))
            pert.append(np.asarray(fn([it.perturbed() for it in chunk]), np.float32))
    except (ModelLoadError, RuntimeError, ValueError, TypeError, AttributeError, KeyError) as e:
        # VisionTowerUnavailable, or a tower whose outputs the hook does not understand: the
        # records are already written; the probe gets a skipped row with the reason
        meta["skipped"] = str(e) if isinstance(e, ModelLoadError) else f"vision-tower hook failed: {type(e).__name__}: {e}"
        write_atomic(meta_path, json.dumps(meta, indent=1).encode())
        return meta_path
    import io

    buf = io.BytesIO()
    np.savez(buf, sample_id=np.array([it.sample_id for it in items]),
             image_id=np.array([it.image_id for it in items]),
             perturbation=np.array([it.perturbation for it in items]),
             sigma=np.array([float(it.sigma) for it in items]),
             clean=np.concatenate(clean), perturbed=np.concatenate(pert))
    data = buf.getvalue()
    write_atomic(npz_path, data)
    meta.update(hook=hook,
                dim=int(np.concatenate(clean).shape[1]), sha256=hashlib.sha256(data).hexdigest())
    write_atomic(meta_path, json.dumps(meta, indent=1).encode())
    return meta_path


def probe_items(task, seed: int) -> list[ProbeItem]:
    """One :class:`ProbeItem` per (sample, perturbed condition) of a VSI task's stimuli."""
    from .samples import PERTURBATIONS

    stim = task.stimuli(seed)
    clean = {s.meta["vsi"]["sample_id"]: s for s in stim if s.meta["vsi"]["condition"] == "clean"}
    out = []
    for s in stim:
        v = s.meta["vsi"]
        if v["condition"] in PERTURBATIONS and v["sample_id"] in clean:
            out.append(ProbeItem(v["sample_id"], v["image_id"], PERTURBATIONS[v["condition"]], float(v["sigma_px"]),
                                 clean[v["sample_id"]].render, s.render))
    return out


def cache_task_features(task, model, directory: str | os.PathLike, seed: int, witness=None,
                        cache_mode: str = "use") -> list[Path]:
    """Own-tower features of ``model`` and (once per task) witness features for every sample of
    the VSI ``task``; ``witness`` is an :class:`~perceptbench.models.base.Encoder` (default:
    :func:`default_witness`, loaded here: CLIP when cached, else efficientnet-lite0), stored under
    ``witness:NAME@task`` so the record says which; a task whose witness features are written
    (any witness) is kept.  Returns the sidecar paths written or kept.

    Features are model calls of the VSI trial under the run's one cache policy: both models are
    called through the response cache (:class:`~perceptbench.models.response_cache.CachedVLM`,
    ``cache_mode`` ``use`` | ``refresh`` | ``off``; a model already wrapped keeps its own mode), so
    a run in a new directory over a filled cache calls neither.  The files under ``directory``
    are the run's output, like its records: a (model, task) whose sidecars exist is kept."""
    from ..models.response_cache import with_response_cache

    model = with_response_cache(model, cache_mode)
    items = probe_items(task, seed)
    out = [cache_probe_features(model, items, directory, key=store_key(model.name, task.task_id))]
    if ProbeFeatures(directory).witness_key(task.task_id, with_features=True):
        return out  # the task's witness features are written (whichever witness it was)
    if witness is None:
        from ..models.base import ModelLoadError

        try:
            witness = default_witness()
        except ModelLoadError as e:
            wkey = store_key(WITNESS, task.task_id)
            p = Path(directory) / (slug(wkey) + ".json")
            p.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(p, json.dumps({"key": wkey, "skipped": str(e)}, indent=1).encode())
            return out + [p]
    wkey = store_key(witness_key(witness.name), task.task_id)
    out.append(cache_probe_features(with_response_cache(witness, cache_mode), items, directory, key=wkey))
    return out


def features_cached(directory: str | os.PathLike, model_name: str, task_id: str) -> bool:
    """True when the (model, task) feature sidecar exists (features written, or a skip recorded)."""
    return (Path(directory) / (slug(store_key(model_name, task_id)) + ".json")).exists()


class ProbeFeatures:
    """Read-only store of cached probe features in a directory (numpy only, no torch).

    ``get(key)`` -> dict {(sample_id, perturbation, sigma): (image_id, clean (d,), perturbed
    (d,))}, or None when nothing is cached; ``skipped(key)`` -> the reason or None.  Raises
    ValueError naming the file when an npz does not match its sidecar's sha256."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self._cache: dict[str, dict | None] = {}

    @property
    def present(self) -> bool:
        """Whether the features folder exists (a records file copied without it: False)."""
        return self.directory.is_dir()

    def witness_key(self, task_id: str, with_features: bool = False) -> str | None:
        """Store key of the witness whose sidecar is written for ``task_id`` (``witness:NAME@task``),
        one with features before a skipped one; None when there is none (``with_features``: None
        unless its features are written)."""
        keys = []
        for p in sorted(self.directory.glob("witness_*.json")) if self.present else ():
            m = json.loads(p.read_text())
            k = m.get("key", "")
            if k.startswith("witness:") and k.endswith("@" + task_id):
                keys.append((bool(m.get("skipped")) or not self.path(k).exists(), k))
        keys.sort()
        if not keys or (with_features and keys[0][0]):
            return None
        return keys[0][1]

    def meta(self, key: str) -> dict:
        """The sidecar of ``key`` ({} when none is written)."""
        return self._meta(key) or {}

    def path(self, key: str) -> Path:
        """The ``.npz`` file that holds (or would hold) the features of ``key``."""
        return self.directory / (slug(key) + ".npz")

    def _meta(self, key: str) -> dict | None:
        p = self.directory / (slug(key) + ".json")
        return json.loads(p.read_text()) if p.exists() else None

    def skipped(self, key: str) -> str | None:
        m = self._meta(key)
        return m.get("skipped") if m else None

    def get(self, key: str) -> dict | None:
        if key in self._cache:
            return self._cache[key]
        m = self._meta(key)
        p = self.directory / (slug(key) + ".npz")
        out = None
        if m and not m.get("skipped") and p.exists():
            data = p.read_bytes()
            if m.get("sha256") and hashlib.sha256(data).hexdigest() != m["sha256"]:
                raise ValueError(f"{p}: contents do not match the sha256 in {p.with_suffix('.json').name}")
            with np.load(p) as z:
                out = {(s, pt, float(sg)): (im, c, q) for s, im, pt, sg, c, q in
                       zip(z["sample_id"].tolist(), z["image_id"].tolist(), z["perturbation"].tolist(),
                           z["sigma"].tolist(), z["clean"], z["perturbed"])}
        self._cache[key] = out
        return out
