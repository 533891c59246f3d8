"""Where and in what precision local models run: device, dtype and attention implementation.

A run's :class:`Runtime` (``perceptbench run --device --dtype --attn-implementation``, or the
Python API's ``device=``, ``dtype=``, ``attn_implementation=``) is handed to every local model
it loads (:func:`perceptbench.models.registry.load_model`).  Precision changes a VLM's answers
(bfloat16 and float16 round the logits differently from float32), so a paper must state it:

* a local transformers VLM (``hf:``) runs in the requested ``dtype`` and attention
  implementation on ``device``; each is part of its ``generation_settings``, so they are in
  every record's ``run_meta.settings``, in the response cache's key, and in the resume check
  (a resumed run in another precision is refused unless ``--allow-mixed``);
* an image encoder (``efficientnet``, ``timm:``, ``open_clip:``, ``hf:`` encoders) runs on
  ``device`` in **float32 always** (its features are compared across models and tasks); its
  records say so (``run_meta.settings``: ``device_type`` and ``dtype = "float32"``, from the
  encoder's declared ``runtime_settings``, :class:`perceptbench.models.base.RuntimeDeclared`);
* API models ignore all three (they run elsewhere).

:func:`check_runtime` refuses, before anything is written, a device that is not there and a dtype
the device cannot compute in (a small matmul and softmax in that dtype on that device must run).

Imports torch only inside :func:`check_runtime` (the lightweight commands never call it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DTYPES", "ATTN_IMPLEMENTATIONS", "Runtime", "check_runtime"]

DTYPES = ("float32", "bfloat16", "float16")
"""The precisions a local VLM can be run in (``--dtype``); ``None`` means float32."""

ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention")
"""transformers' ``attn_implementation`` values (``PreTrainedModel.from_pretrained``); ``None``
keeps the model's own default (sdpa where supported)."""


@dataclass(frozen=True)
class Runtime:
    """Device, dtype and attention implementation of a run's local models.

    ``device``: a torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``);
    ``dtype``: one of :data:`DTYPES` or ``None`` (float32); ``attn_implementation``: one of
    :data:`ATTN_IMPLEMENTATIONS` or ``None`` (the model's default).  The default instance is
    what every run did before these options existed (CPU, float32, default attention)."""

    device: str = "cpu"
    dtype: str | None = None
    attn_implementation: str | None = None
    repetitions: int = 1
    """Answers per (task, stimulus) of each VLM answering a prompt (``--repetitions``; seed 000 D.4),
    each its own trial record (``rep`` 0..N-1), scored by their majority vote
    (:mod:`perceptbench.scorers.repetitions`); 1: one greedy answer, as every run before."""
    temperature: float = 0.0
    """Sampling temperature of local ``hf:`` VLMs' answers (``--temperature``); 0: greedy decoding (the
    default, seed 000 D.4); above 0 each answer is sampled (top-k and top-p off) from a seed derived
    from the run seed, the task, the stimulus and the repetition, so a run is reproducible.  Recorded
    in every record (``run_meta.settings``), in the response cache key and in the resume check."""

    @property
    def is_default(self) -> bool:
        """True for CPU, float32 and the model's default attention (sampling settings aside)."""
        return self.device == "cpu" and self.dtype in (None, "float32") and self.attn_implementation is None

    def check_names(self) -> None:
        """ValueError (one line naming the option and the allowed values) for a dtype or an
        attention implementation that is not one of :data:`DTYPES` / :data:`ATTN_IMPLEMENTATIONS`,
        or an empty device.  Imports nothing."""
        if self.dtype is not None and self.dtype not in DTYPES:
            raise ValueError(f"--dtype {self.dtype!r}: must be one of {', '.join(DTYPES)}")
        if self.attn_implementation is not None and self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(f"--attn-implementation {self.attn_implementation!r}: must be one of "
                             f"{', '.join(ATTN_IMPLEMENTATIONS)}")
        if not str(self.device).strip():
            raise ValueError("--device '': name a torch device, e.g. cpu, cuda, cuda:1, mps")
        if int(self.repetitions) < 1:
            raise ValueError(f"--repetitions {self.repetitions}: must be 1 or more")
        if not float(self.temperature) >= 0:
            raise ValueError(f"--temperature {self.temperature}: must be 0 (greedy) or more")
        if self.repetitions > 1 and self.temperature == 0:
            raise ValueError(f"--repetitions {self.repetitions} with --temperature 0: greedy answers repeat "
                             "exactly; give --temperature above 0 (seed 000 D.4: repetitions are for nonzero "
                             "temperature)")


def check_runtime(rt: Runtime) -> None:
    """Refuse, in one line, a runtime the machine cannot run; called before anything is written.

    Raises ValueError for a bad name (:meth:`Runtime.check_names`), a device torch does not
    parse, a CUDA device when ``torch.cuda.is_available()`` is False or its index is not below
    ``torch.cuda.device_count()``, an MPS device when MPS is not available, and a dtype the device
    cannot compute in: a (4, 4) matmul followed by a softmax in that dtype on that device raises
    (e.g. float16 on a CPU build without half-precision kernels).  ImportError without torch."""
    rt.check_names()
    if rt.is_default:
        return
    import torch

    try:
        dev = torch.device(rt.device)
    except (RuntimeError, ValueError) as e:
        raise ValueError(f"--device {rt.device!r}: not a torch device ({str(e).splitlines()[0]}); "
                         "e.g. cpu, cuda, cuda:1, mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {rt.device}: CUDA is not available here (torch.cuda.is_available() is "
                             f"False; torch {torch.__version__}); run on a machine with an NVIDIA GPU and a CUDA "
                             "build of torch, or use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"--device {rt.device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError(f"--device {rt.device}: MPS (Apple GPU) is not available here; use --device cpu")
    if rt.dtype not in (None, "float32"):
        dt = getattr(torch, rt.dtype)
        try:
            x = torch.ones(4, 4, dtype=dt, device=dev)
            torch.softmax(x @ x, dim=-1)
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"--dtype {rt.dtype}: device {rt.device} cannot compute in it "
                             f"({str(e).splitlines()[0]}); use --dtype float32") from None

