"""The task interface: a stimulus, a task and the trial-record constructor.

The score row (:class:`perceptbench.core.rows.ScoreRow`) and task settings
(:class:`perceptbench.core.settings.Setting`) live in :mod:`perceptbench.core`, below every layer
that uses them."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
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
    title: ClassVar[str] = ""
    """A short human-readable name for figure titles and report headings ("Mark colour
    odd-one-out"), shown beside the task id (:func:`perceptbench.tasks.registry.task_title`);
    ``description`` is the one-line account of ``perceptbench tasks``."""
    prompt_text: ClassVar[str]
    prompt_version: ClassVar[int] = 1
    defaults: ClassVar[dict[str, str]] = {}
    allowed: ClassVar[dict[str, Sequence[str]]] = {}
    settings: ClassVar[dict[str, Setting]] = {}
    """Type and range per setting key (keys of ``defaults``); ``allowed`` entries are
    choice settings."""
    location_settings: ClassVar[tuple[str, ...]] = ()
    """Settings that say where data lie (e.g. an image folder): left out of ``task_id`` and of
    ``run_meta.task_params``, recorded in ``run_meta.data_location`` instead, so that moving
    the folder or running on another machine keeps the task's identity."""
    content_settings: ClassVar[tuple[str, ...]] = ()
    """Settings naming a data file or folder (e.g. a question file) that the task id names by
    content: ``sha256:`` and the first 16 hex digits of its hash (:func:`content_id`); the path
    itself goes to ``run_meta.data_location``."""
    late_settings: ClassVar[tuple[str, ...]] = ()
    """Settings added after the task's records were first written: left out of
    :attr:`identity_params` (so of ``run_meta.task_params`` and the resume check) while at their
    default, so that records and runs written before the setting existed stay byte-identical and
    resume; a non-default value is recorded and enters the task id like any setting."""
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

    def check_images(self, seed: int) -> None:
        """Decode every image from outside the project that the task shows at ``seed``, so that a
        missing, corrupt, truncated or oversized file fails
        (:class:`~perceptbench.stimuli.images.ImageLoadError` naming it) before the run directory
        is created.  The runner calls this for every task before anything is written.  Default:
        nothing (the task draws its stimuli itself or reads checksummed sources)."""

    def prepare_models(self, seed: int) -> None:
        """Load the models the task itself needs (e.g. VSI's grounding step) before any model
        under test is loaded and before anything is written; raises ``ModelLoadError``.
        Default: nothing."""

    @property
    def identity_params(self) -> dict[str, str]:
        """The settings that make the task what it is: ``params`` without
        :attr:`location_settings`, with each :attr:`content_settings` value named by content
        (:func:`content_id`; computed once).  ``task_id`` is built from these and they are
        recorded as ``run_meta.task_params``."""
        ident = self.__dict__.get("_identity_params")
        if ident is None:
            ident = {k: (content_id(v) if k in self.content_settings and v != self._defaults.get(k) else v)
                     for k, v in self.params.items() if k not in self.location_settings
                     and not (k in self.late_settings and v == self._defaults.get(k))}
            self.__dict__["_identity_params"] = ident
        return ident

    @property
    def data_location(self) -> dict[str, str]:
        """Where the task's data lie (:attr:`location_settings` and the paths of
        :attr:`content_settings`, non-default ones), recorded as ``run_meta.data_location``."""
        return {k: v for k, v in sorted(self.params.items())
                if k in self.location_settings + self.content_settings and v != self._defaults.get(k)}

    @property
    def task_id(self) -> str:
        extra = {k: v for k, v in sorted(self.identity_params.items()) if self._defaults.get(k) != v}
        if not extra:
            return self.base_id
        return self.base_id + "@" + ",".join(f"{k}={v}" for k, v in extra.items())

    @property
    def spec(self) -> str:
        """``base_id@key=value,...`` with every non-default setting as given (paths included):
        what :func:`perceptbench.tasks.get_task` rebuilds this very task from (e.g. on a Ray
        worker).  Equal to ``task_id`` for a task without location or content settings."""
        extra = {k: v for k, v in sorted(self.params.items()) if self._defaults.get(k) != v}
        return self.base_id + ("@" + ",".join(f"{k}={v}" for k, v in extra.items()) if extra else "")

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

    human_ref_literature: ClassVar[str] = ""
    """The published source of a human reference that is no data file (a literature reference,
    e.g. ``"Healey 1996; Ware 2013: the 6-12 ..."``), named in the report's provenance table;
    empty where the reference is a data file or where there is none."""

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

    @property
    def parses_raw_output(self) -> bool:
        """True when :meth:`parse_record` reads nothing of a record but its ``raw_output`` (it is
        :meth:`parse_answer` of that text): scoring then re-parses each distinct answer text once,
        on the columns (:func:`perceptbench.scoring.reparse_columns`).  False for a subclass that
        overrides :meth:`parse_record`."""
        return type(self).parse_record is Task.parse_record

    def parse_key(self, r: TrialRecord):
        """What :meth:`parse_record` reads of ``r``, as a hashable key (records with equal keys
        parse alike, so scoring parses each distinct key once, issue 25), or None when that is
        not known (a subclass overriding :meth:`parse_record`): then every record is parsed.
        Default: the ``raw_output`` text (:meth:`parse_answer` is a function of it and the mode)."""
        return r.raw_output if self.parses_raw_output else None

    def record_problem(self, r: TrialRecord) -> str | None:
        """What this task rules out in a record the schema admits, as one line naming the field
        (``validate`` reports it beside the schema's problems), or None.  Never raises.

        Here: a model's (``encoder``, ``vlm``, ``api``) ``response`` or ``ground_truth`` outside
        :meth:`options` (each element of a list): every readout and parser answers with one of them
        (a count regression is clipped to the rendered range), so such a value was edited in or
        written by other code, and scoring would count it.  Human and published records are left
        alone: observers' own answers include ``na`` and ``other``.  Overridden by the VSI tasks
        (:class:`perceptbench.vsi.benchmarks.VSIExternalTask` requires the benchmark's ids,
        ``run_meta.external``, on every answer)."""
        if r.model_family in ("human", "published"):
            return None
        options = self.__dict__.get("_options_set")
        if options is None:
            options = self.__dict__["_options_set"] = frozenset(self.options())
        for field in ("response", "ground_truth"):
            v = getattr(r, field)
            outside = [x for x in (v if isinstance(v, list) else [v]) if x is not None and x not in options]
            if outside:
                shown = ", ".join(repr(x) for x in self.options()[:8]) + (", ..." if len(self.options()) > 8 else "")
                return (f"field {field}: {outside[0]!r} is not one of the task's answers ({shown}); a model's "
                        f"{field} always is")
        return None

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        return []

    def published_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        """The trials of models that the task's release itself published (``model_family
        "published"``), written beside the human records and scored like any model's; none
        by default."""
        return []

    @abc.abstractmethod
    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """Score rows from this task's trial records only; ``seed`` seeds the bootstrap."""


CONTENT_ID_PREFIX = "sha256:"
_DATA_SUFFIXES = (".parquet", ".csv", ".tsv", ".json", ".jsonl")


def content_id(value: str) -> str:
    """A data file or folder named by content: ``sha256:`` and the first 16 hex digits of the
    sha256 of the file's bytes (a folder: of the sorted relative paths and sha256s of its
    ``.parquet``/``.csv``/``.tsv``/``.json``/``.jsonl`` files; images are not hashed).  A value
    that already is a content id (a task rebuilt from a record) is returned as is, and so is a
    path that does not exist (the loader then says what is missing, in one line)."""
    import hashlib

    from ..seeding import file_sha256

    if value.startswith(CONTENT_ID_PREFIX) or not value:
        return value
    p = Path(value).expanduser()
    if p.is_file():
        return CONTENT_ID_PREFIX + file_sha256(p)[:16]
    if p.is_dir():
        h = hashlib.sha256()
        for f in sorted(x for x in p.rglob("*") if x.is_file() and x.suffix.lower() in _DATA_SUFFIXES):
            h.update(f"{f.relative_to(p).as_posix()}\0{file_sha256(f)}\n".encode())
        return CONTENT_ID_PREFIX + h.hexdigest()[:16]
    return value


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
                rep: int = 0, n_reps: int | None = None, **meta: Any) -> TrialRecord:
    """Build and validate one trial record for ``task`` (``correct`` is derived); ``n_reps``: the
    repetitions per stimulus (``--repetitions``; default the task's own ``n_reps``, 1)."""
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
        raw_output=raw_output, rep=rep, n_reps=task.n_reps if n_reps is None else n_reps, prompt_id=prompt_id,
        prompt_hash=prompt_hash,
        run_meta={"model_version": model_version, "seed": seed, "run_id": run_id,
                  "package_version": __version__, "task_params": task.identity_params,
                  **({"data_location": task.data_location} if task.data_location else {}), **meta},
    )
