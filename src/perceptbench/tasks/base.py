"""The task interface: a stimulus, a task and the trial-record constructor.

The score row (:class:`perceptbench.core.rows.ScoreRow`) and task settings
(:class:`perceptbench.core.settings.Setting`) live in :mod:`perceptbench.core`, below every layer
that uses them."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from PIL import Image

from ..core.rows import ScoreRow
from ..core.settings import Setting
from ..records import Answer, TrialRecord
from ..seeding import text_hash


@dataclass
class Stimulus:
    """One stimulus of a task.

    ``render()`` returns the human-facing image (the numbered montage for odd-one-out
    tasks); ``components()`` the component images encoders embed instead (odd-one-out
    tasks only, in the shown order).  ``split`` is ``"test"`` (trials are run and scored)
    or ``"probe_train"`` (used only to fit encoder probes).  ``meta`` goes into the
    record's ``run_meta`` (JSON-able)."""

    stimulus_id: str
    split: str
    render: Callable[[], Image.Image]
    ground_truth: Answer
    manipulated_value: Any = None
    components: Callable[[], list[Image.Image]] | None = None
    meta: dict = field(default_factory=dict)


class Task(abc.ABC):
    """Base class.  Subclasses set the class attributes and implement :meth:`stimuli`,
    :meth:`human_records` and :meth:`score`.

    ``params`` holds variant settings; non-default ones are appended to the base id as
    ``@key=value[,key=value]`` (sorted keys) to form ``task_id``.  Every setting with a
    :class:`Setting` in ``settings`` (or a list in ``allowed``) is validated and
    normalised when the task is made, so a bad value fails before anything is written
    and ``n_test=040`` and ``n_test=40`` are one task id."""

    base_id: ClassVar[str]
    principle: ClassVar[str]
    track: ClassVar[str]
    response_space: ClassVar[str]
    encoder_readout: ClassVar[str]
    description: ClassVar[str]
    prompt_text: ClassVar[str]
    prompt_version: ClassVar[int] = 1
    defaults: ClassVar[dict[str, str]] = {}
    allowed: ClassVar[dict[str, Sequence[str]]] = {}
    settings: ClassVar[dict[str, Setting]] = {}
    """Type and range per setting key (keys of ``defaults``); ``allowed`` entries are
    choice settings."""
    owner: ClassVar[str] = "perceptbench"
    n_reps: ClassVar[int] = 1
    is_vsi: ClassVar[bool] = False
    """True for the VSI tasks (next-token distributions under clean and perturbed conditions,
    seed 002 §2): :func:`perceptbench.respond.task_kind` reads it to choose a respondent."""
    shots: int = 0
    """Few-shot examples shown before the test image (each one more image per VLM trial)."""
    prompt_template: str | None = None
    """The prompt with its per-stimulus slots unfilled, when the prompt varies per stimulus
    (its hash is the prompt version, :func:`perceptbench.respond.prompt_version`); None: the
    prompt is ``prompt_text``."""
    score_columns: ClassVar[Callable[..., list[ScoreRow]] | None] = None
    """``score_columns(columns, seed) -> rows``: the columnar scoring path
    (:class:`perceptbench.record_table.TaskColumns`) of tasks whose records need no re-parse;
    None: the task scores record objects only (:meth:`score`)."""

    def __init__(self, **params: str):
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise ValueError(f"task {self.base_id} has no setting(s) {sorted(unknown)}; "
                             f"settings: {self.defaults or 'none'}")
        self._defaults = {k: self._normalise(k, v) for k, v in self.defaults.items()}
        self.params = {**self._defaults, **{k: self._normalise(k, v) for k, v in params.items()}}
        self.check_settings()

    def setting_spec(self, key: str) -> Setting | None:
        """The :class:`Setting` of ``key`` (from ``settings``, else ``allowed``), or None."""
        if key in self.settings:
            return self.settings[key]
        if key in self.allowed:
            return Setting("choice", choices=tuple(str(c) for c in self.allowed[key]))
        return None

    def _normalise(self, key: str, value) -> str:
        spec = self.setting_spec(key)
        if spec is None:
            return str(value)
        try:
            return spec.normalise(value)
        except ValueError as e:
            raise ValueError(f"task {self.base_id}: setting {key}={str(value)!r} is invalid; allowed: {e}") from None

    def check_settings(self) -> None:
        """Checks across settings (subclasses); raise ValueError naming the settings."""

    def prepare_models(self, seed: int) -> None:
        """Load the models the task itself needs (e.g. VSI's grounding step) before any model
        under test is loaded and before anything is written; raises ``ModelLoadError``.
        Default: nothing."""

    @property
    def task_id(self) -> str:
        extra = {k: v for k, v in sorted(self.params.items()) if self._defaults.get(k) != v}
        if not extra:
            return self.base_id
        return self.base_id + "@" + ",".join(f"{k}={v}" for k, v in extra.items())

    @property
    def prompt_id(self) -> str:
        return f"{self.base_id}.v{self.prompt_version}"

    @property
    def prompt_hash(self) -> str:
        return text_hash(self.prompt_text)

    human_ref_id: ClassVar[str]
    """Id of the human reference trials are scored against (a class attribute or property)."""

    human_data: ClassVar[str] = ""
    """In plain words, the human data this task is scored against, starting ``yes:`` (what the
    humans gave, how many, whose study) or ``no:`` (what stands in for it: a published band,
    ground truth by construction); shown by ``perceptbench tasks`` (a class attribute or property)."""

    @abc.abstractmethod
    def options(self) -> tuple:
        """The response options a parser may return (labels, positions or counts)."""

    @abc.abstractmethod
    def stimuli(self, seed: int) -> list[Stimulus]:
        """Every stimulus of the task (test and probe-train), deterministic in ``seed``."""

    def encoder_readout_for(self, model) -> str:
        """The readout an encoder uses on this task (may depend on the encoder's abilities)."""
        return self.encoder_readout

    def encoder_not_applicable(self, readout: str) -> str | None:
        """Why this task's setting does not apply to an encoder answering with ``readout``
        (a short sentence), or None when it does.  The runner then writes the encoder's
        trials as skipped (null response, ``run_meta.skipped`` = the reason) and scoring gives
        a ``skipped`` row: no number that would only repeat another task's."""
        return None

    def vlm_request(self, s: Stimulus, seed: int) -> tuple[tuple[Image.Image, ...], str, dict]:
        """(images, prompt, extra run_meta) for one VLM trial: the human-facing image and the
        task's verbatim prompt."""
        return (s.render(),), self.prompt_text, {}

    def parse_answer(self, text: str | None, mode: str = "default") -> tuple[Any, dict]:
        """Rule-parse a VLM answer into the response space -> (response or None, parse meta).

        ``mode``: a parser mode of :data:`perceptbench.readouts.parse.MODES` (``default``,
        ``strict``, ``seed``).  The meta (JSON-able, stored as ``run_meta.parse``) holds
        ``rule``, ``ambiguous``, ``mode`` and the parser's metadata (answer extraction,
        ``null_reason``).  Scoring calls this again on ``raw_output`` for each mode."""
        from ..readouts.parse import parse_choice

        pr = parse_choice(text or "", self.options(), mode=mode)
        return pr.response, pr.record_meta(mode)

    def parse_record(self, r: TrialRecord, mode: str = "default") -> tuple[Any, dict]:
        """Re-parse a VLM record's ``raw_output`` under parser ``mode`` (scoring's
        ``--parser``); default: :meth:`parse_answer`."""
        return self.parse_answer(r.raw_output, mode=mode)

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        return []

    @abc.abstractmethod
    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """Score rows from this task's trial records only; ``seed`` seeds the bootstrap."""


def require_test_stimuli(task: Task, stimuli: list[Stimulus]) -> None:
    """Raise ValueError when ``stimuli`` has no ``"test"`` stimulus: such a task would run
    nothing and score an empty table (issue 7 item 7: an error, never an empty result)."""
    if not any(s.split == "test" for s in stimuli):
        settings = ",".join(f"{k}={v}" for k, v in sorted(task.params.items())) or "defaults"
        raise ValueError(f"{task.task_id}: no test stimuli with settings {settings} "
                         f"({len(stimuli)} stimuli, none in the test split); nothing to run or score")


def make_record(task: Task, *, stimulus_id: str, model: str, model_family: str, readout: str,
                response: Answer, ground_truth: Answer, manipulated_value: Any,
                raw_output: str | None, prompt_id: str | None, prompt_hash: str | None,
                model_version: str, seed: int, run_id: str, human_ref_id: str | None = None,
                rep: int = 0, **meta: Any) -> TrialRecord:
    """Build and validate one trial record for ``task`` (``correct`` is derived)."""
    from ..core.version import __version__
    from ..records import make_trial_id, score_correct

    return TrialRecord(
        trial_id=make_trial_id(task.task_id, stimulus_id, model, rep),
        task_id=task.task_id, principle=task.principle, track=task.track,
        stimulus_id=stimulus_id, manipulated_value=manipulated_value, model=model,
        model_family=model_family, readout=readout, owner=task.owner,
        response_space=task.response_space, response=response, ground_truth=ground_truth,
        correct=score_correct(response, ground_truth),
        human_ref_id=human_ref_id if human_ref_id is not None else task.human_ref_id,
        raw_output=raw_output, rep=rep, n_reps=task.n_reps, prompt_id=prompt_id,
        prompt_hash=prompt_hash,
        run_meta={"model_version": model_version, "seed": seed, "run_id": run_id,
                  "package_version": __version__, "task_params": task.params, **meta},
    )
