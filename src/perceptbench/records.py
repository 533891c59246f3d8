"""The trial record and its append-only, crash-safe store.

One record per model x stimulus x repetition, with exactly the fields of seed 000
appendix C (``SPEC.md`` §3).  Scoring reads nothing else, so encoders, local VLMs,
API models and human observers are interchangeable downstream.

Field meanings (for every kind of respondent)
--------------------------------------------
trial_id          ``task_id|stimulus_id|model|rep{n}`` (checked on construction).
task_id           task name plus every non-default setting that changes a trial's
                  content or human reference, e.g. ``similarity.chart.mark_color@kernel=l5``
                  (see :mod:`perceptbench.tasks.registry`).
principle, track  Gestalt principle (``closure``/``similarity``/``saliency``) and track
                  (``nat``/``chart``/``syn``).
stimulus_id       stable id of the human-facing stimulus (e.g. ``silh_airplane1``).
manipulated_value the value of the manipulated stimulus variable (e.g. the rendered series
                  count k), or null when the task manipulates none.
model             the short name the user gave (``efficientnet-lite0``), or
                  ``human:subject-01`` / ``human:kernel-l5`` for human data,
                  ``published:<name>`` for a release's published model trials.
model_family      ``encoder``, ``vlm`` (local), ``api``, ``human``, or ``published``: a model's
                  trials that a human-data release itself published (e.g. Geirhos et al.'s
                  CNNs, ``published:alexnet``), read from the release, not run.
readout           how a response was obtained: ``prototype_cosine``, ``odd_one_out_cosine``,
                  ``ridge_round``, ``vlm_prompt``, ``human_trial``, ``human_kernel``,
                  ``published_trial``.
owner             who maintains the task definition (``perceptbench``).
response_space    ``choice`` (a class label), ``position`` (1..3 in the shown order) or
                  ``count`` (an integer); ``multilabel`` for set-valued answers.
response          the parsed answer; null = unparseable / no answer (excluded from scores).
ground_truth      the task's scoring target (class label; the human odd-one-out position;
                  the rendered count); null when the stimulus has no defined target.
correct           response == ground_truth, or null when either is null.
human_ref_id      id of the human datum the trial is scored against (source + variant).
raw_output        VLMs: the model's text, verbatim.  Encoders: a compact JSON string of the
                  readout's decision values (e.g. cosine per option).  Humans: the raw
                  response field of the published data.
rep, n_reps       repetition index and count (1 for deterministic runs).
prompt_id         VLMs: the verbatim prompt's id (``closure.nat.silhouette.v1``).
                  Encoders: the readout's id (``readout.prototype_cosine.v1``).
                  Humans: the source experiment's id.
prompt_hash       first 8 hex digits of sha256 of the prompt (or readout spec) text.
run_meta          ``model_version`` (exact weights), ``seed``, ``run_id`` and further keys:
                  ``stimulus_sha256``, ``split``, ``settings``, ``package_version``; on a VSI
                  record ``vsi``, the first-token distribution and its sample (the VSI record
                  format: :mod:`perceptbench.vsi.samples`), checked by :func:`vsi_meta_problem`.

A line read from a records file (:func:`parse_record_line`) is also refused when a key appears
twice in its ``run_meta.vsi``, or ``vsi`` twice in its ``run_meta`` (elsewhere a repeated key is
read as :func:`json.loads` reads it, the last value).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .core.rundir import RecordsLock

SCHEMA_FIELDS: tuple[str, ...] = (
    "trial_id", "task_id", "principle", "track", "stimulus_id", "manipulated_value",
    "model", "model_family", "readout", "owner", "response_space", "response",
    "ground_truth", "correct", "human_ref_id", "raw_output", "rep", "n_reps",
    "prompt_id", "prompt_hash", "run_meta",
)
"""The top-level fields of a trial record, in the order of seed 000 appendix C."""

MODEL_FAMILIES = ("encoder", "vlm", "api", "human", "published")
RESPONSE_SPACES = ("choice", "position", "count", "multilabel")

JSONScalar = str | int | float | bool | None
Answer = str | int | list[str] | None


class RecordError(ValueError):
    """A records file or record is invalid.  The message names the file, line and field."""


VSI_META_KEYS = ("sample_id", "image_id", "benchmark", "condition", "sigma_px", "dilate_px", "region_source",
                 "region_bbox", "fallback", "answer_prefix", "top_k", "token_ids", "tokens", "logprobs",
                 "complete", "distribution_source", "image_sha256", "max_prob", "verbal_conf", "verbal_raw")
"""The keys of a VSI record's ``run_meta.vsi`` (their meanings: :mod:`perceptbench.vsi.samples`)."""

_VSI_KEY_SET = frozenset(VSI_META_KEYS)

VSI_CONDITIONS = ("clean", "region_blur", "whole_blur", "image_withheld")
"""The values of ``run_meta.vsi.condition`` (:data:`perceptbench.vsi.samples.PERTURBATIONS` names
the perturbed ones)."""


def _is_number(x: Any) -> bool:
    """A JSON number as :func:`json.loads` gives it (an int or a float, not a bool) that is a finite
    double (``1e400`` reads as an infinity, ``10**400`` as an int no double holds)."""
    if type(x) is int:
        return -_MAX_DOUBLE <= x <= _MAX_DOUBLE
    return type(x) is float and math.isfinite(x)


_MAX_DOUBLE = int(sys.float_info.max)


def _first_bad(xs: list, ok_types: frozenset, nullable: bool = False) -> int | None:
    """Index of the first entry of ``xs`` that is not a finite number (nor null where ``nullable``);
    with ``ok_types`` :data:`_INTS` the first that is not an int.  None when there is none.  The common
    case (every entry fine) is decided in C: the set of the entries' types, then ``math.isfinite``."""
    types = set(map(type, xs))
    if ok_types is _INTS:
        return None if types <= ok_types else next(i for i, x in enumerate(xs) if type(x) is not int)
    if types <= ok_types:
        try:
            if all(map(math.isfinite, xs)):
                return None
        except OverflowError:  # an int beyond the doubles
            pass
    return next((i for i, x in enumerate(xs) if not (x is None and nullable) and not _is_number(x)), None)


_NUMBERS, _INTS = frozenset({int, float}), frozenset({int})


VSI_EXTRA_KEYS = ("external", "no_image", "vsi_answer")
"""The keys of a VSI record's ``run_meta`` besides ``vsi`` that scoring reads (written by the VSI
tasks on external benchmarks, :class:`perceptbench.vsi.benchmarks.VSIExternalTask`): ``external``
the benchmark's ids of the question (the loader's meta: category, set, pair ...), ``no_image`` true
for a question the benchmark asks without an image, ``vsi_answer`` the answer's type and options
(read by the parse of lettered answers).  Absent on other records."""

VSI_READOUTS = ("vlm_vsi_clean", "vlm_vsi_perturbed")
"""The readouts of VSI records: perceptbench writes ``run_meta.vsi`` on every one of them (skips
included), so one without it lost its distribution (:func:`vsi_meta_problem`)."""


def vsi_meta_problem(run_meta: dict, readout: str | None = None) -> tuple[str, str] | None:
    """The one rule for a VSI line's ``run_meta.vsi``: ``(field, what is wrong)`` for the first
    problem, or None.  Applied to every line read from a records file (:func:`parse_record_line`),
    so ``score``, ``validate``, ``merge``, ``report`` and ``export`` refuse the same lines with the
    same message; ``score``'s and ``export``'s columnar reads send a line they cannot rule out to
    this rule (:func:`perceptbench.record_table.read_columns`,
    :func:`perceptbench.reports.export.records_arrow` through :func:`run_meta_problem`).

    A record without the ``vsi`` key has nothing to check (human records), unless ``readout`` is
    one of :data:`VSI_READOUTS` (it lost its distribution).  Otherwise ``vsi`` is an object, and:

    * a record that pairs (not skipped for the model: ``run_meta.skipped`` unset, or
      ``skip_scope`` ``"trial"``) has every key of :data:`VSI_META_KEYS` and a ``condition`` of
      :data:`VSI_CONDITIONS`;
    * ``token_ids`` is null or a list of integers; ``tokens`` null or a list; ``logprobs`` a list
      of finite numbers or nulls (a null is a NaN or an infinity as perceptbench writes them: such a
      distribution is judged, not refused, ``invalid_distribution``); a literal ``NaN``,
      ``Infinity`` or a number beyond the doubles (``1e400``) is never written by perceptbench;
    * ``logprobs`` has one entry per key (``token_ids``, or ``tokens`` where ``token_ids`` is null);
    * no key appears twice in ``vsi``, nor ``vsi`` twice in ``run_meta`` (checked while decoding the
      line, :func:`parse_record_line`);
    * ``sigma_px`` is a finite number >= 0; ``max_prob`` and ``verbal_conf`` a finite number or null, and
      ``max_prob`` is a number on a clean record whose first log-probability is one (it is its exp).

    What a distribution says (a positive log-probability, a duplicate token, a total above 1,
    one token or all equal) is judged when scoring (:func:`perceptbench.vsi.samples.distribution_flags`),
    never refused here.  Never raises."""
    if "vsi" not in run_meta:
        if readout in VSI_READOUTS:
            return "run_meta.vsi", f"missing on a {readout} record (perceptbench writes it on every VSI record)"
        return None
    v = run_meta["vsi"]
    if not isinstance(v, dict):
        return "run_meta.vsi", f"must be an object (the VSI record format), not {json.dumps(v)[:40]}"
    skipped = run_meta.get("skipped")
    if not skipped or run_meta.get("skip_scope") == "trial":  # the record pairs
        if not v.keys() >= _VSI_KEY_SET:
            return "run_meta.vsi", f"lacks {[k for k in VSI_META_KEYS if k not in v]}"
        if v["condition"] not in VSI_CONDITIONS:
            return "run_meta.vsi.condition", f"{v['condition']!r} is not one of {list(VSI_CONDITIONS)}"
    keys = None
    for name in ("token_ids", "tokens"):
        if name not in v or v[name] is None:
            continue
        if not isinstance(v[name], list):
            return f"run_meta.vsi.{name}", f"must be null or a list, not {json.dumps(v[name])[:40]}"
        if name == "token_ids":
            bad = _first_bad(v[name], _INTS)
            if bad is not None:
                return "run_meta.vsi.token_ids", f"entry {bad} is {v[name][bad]!r}, not an integer (a token id)"
        keys = v[name] if keys is None else keys
    if "logprobs" in v:
        lps = v["logprobs"]
        if not isinstance(lps, list):
            return "run_meta.vsi.logprobs", f"must be a list of log-probabilities, not {json.dumps(lps)[:40]}"
        bad = _first_bad(lps, _NUMBERS, nullable=True)
        if bad is not None:
            return ("run_meta.vsi.logprobs", f"entry {bad} is {lps[bad]!r}, not a finite number (perceptbench "
                    "writes a log-probability as a number, or null when it was NaN or infinite)")
        if lps and keys is None:
            return "run_meta.vsi.tokens", "null, as is token_ids: the log-probabilities have no tokens"
        if keys is not None and len(lps) != len(keys):
            return ("run_meta.vsi.logprobs", f"{len(lps)} log-probabilities for {len(keys)} "
                    f"{'token_ids' if v.get('token_ids') is not None else 'tokens'}")
    if "sigma_px" in v and not (_is_number(v["sigma_px"]) and v["sigma_px"] >= 0):
        return "run_meta.vsi.sigma_px", f"{v['sigma_px']!r} is not a finite number >= 0 (the blur sigma in pixels)"
    for name in ("max_prob", "verbal_conf"):
        if v.get(name) is not None and not _is_number(v[name]):
            return f"run_meta.vsi.{name}", f"{v[name]!r} is neither a finite number nor null"
    lps = v.get("logprobs")
    if v.get("condition") == "clean" and v.get("max_prob", 0) is None and lps and lps[0] is not None:
        return "run_meta.vsi.max_prob", "null on a clean record whose first log-probability is a number (its exp)"
    return None


class RunMeta(BaseModel):
    """``run_meta``: the seed's three keys are required; more keys are allowed."""

    model_config = ConfigDict(extra="allow", strict=True)
    model_version: str
    seed: int
    run_id: str


class TrialRecord(BaseModel):
    """One trial.  Exactly the fields in :data:`SCHEMA_FIELDS`; unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    trial_id: str
    task_id: str
    principle: str
    track: str
    stimulus_id: str
    manipulated_value: JSONScalar
    model: str
    model_family: str
    readout: str
    owner: str
    response_space: str
    response: Answer
    ground_truth: Answer
    correct: bool | None
    human_ref_id: str | None
    raw_output: str | None
    rep: int
    n_reps: int
    prompt_id: str | None
    prompt_hash: str | None
    run_meta: RunMeta

    @model_validator(mode="after")
    def _check(self) -> "TrialRecord":
        expected = make_trial_id(self.task_id, self.stimulus_id, self.model, self.rep)
        if self.trial_id != expected:
            raise ValueError(f"trial_id {self.trial_id!r} != {expected!r}")
        if self.model_family not in MODEL_FAMILIES:
            raise ValueError(f"model_family {self.model_family!r} not in {MODEL_FAMILIES}")
        if self.response_space not in RESPONSE_SPACES:
            raise ValueError(f"response_space {self.response_space!r} not in {RESPONSE_SPACES}")
        if not 0 <= self.rep < self.n_reps:
            raise ValueError(f"rep {self.rep} outside 0..n_reps-1 (n_reps={self.n_reps})")
        if self.response is None or self.ground_truth is None:
            if self.correct is not None:
                raise ValueError("correct must be null when response or ground_truth is null")
        elif self.correct is None:
            raise ValueError("correct is null although response and ground_truth are set")
        elif self.correct != _answers_equal(self.response, self.ground_truth):
            raise ValueError(
                f"correct={self.correct} disagrees with response {self.response!r} "
                f"vs ground_truth {self.ground_truth!r}")
        return self

    def to_json_line(self) -> str:
        """The record as one JSON line (fields in schema order, no trailing newline)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))


def _answers_equal(a: Answer, b: Answer) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return sorted(a) == sorted(b)
    return a == b


TRIAL_ID_SEPARATOR = "|"
"""Joins the parts of a trial id; no part may contain it (else two trials could share one id:
model ``m1|m2`` on stimulus ``s`` and model ``m2`` on stimulus ``s|m1``)."""


def make_trial_id(task_id: str, stimulus_id: str, model: str, rep: int) -> str:
    """``task_id|stimulus_id|model|rep{n}`` (seed 000 appendix C).

    Raises ValueError naming the part when ``task_id``, ``stimulus_id`` or ``model`` contains
    :data:`TRIAL_ID_SEPARATOR`: the id would not say which trial it is."""
    for name, part in (("task id", task_id), ("stimulus id", stimulus_id), ("model name", model)):
        if TRIAL_ID_SEPARATOR in str(part):
            raise ValueError(f"{name} {part!r} contains {TRIAL_ID_SEPARATOR!r}, the trial id separator: two "
                             f"trials could share one id; rename it without {TRIAL_ID_SEPARATOR!r}")
    return f"{task_id}|{stimulus_id}|{model}|rep{rep}"


def score_correct(response: Answer, ground_truth: Answer) -> bool | None:
    """``correct`` for a record: null if either side is null, else equality (sets for lists)."""
    if response is None or ground_truth is None:
        return None
    return _answers_equal(response, ground_truth)


_ANSWER_TYPES_TEXT = "a string, an integer, a list of strings or null"
"""What an answer field may hold (:data:`Answer`), in words."""


def _validation_problem(e: ValidationError, obj: dict) -> str:
    """One line for the first problem pydantic found in record ``obj``: ``field F: what it must be
    (got VALUE)``, or the record-level rule's own sentence (``correct=True disagrees ...``), without
    pydantic's wording of its internals (a union's branch as ``response.str``, ``Value error,``)."""
    first = e.errors()[0]
    loc, msg = first["loc"], first["msg"].removeprefix("Value error, ")
    if not loc:
        return msg
    if loc[0] in ("response", "ground_truth"):  # Answer is a union: pydantic names a branch it tried
        loc, msg = loc[:1], f"must be {_ANSWER_TYPES_TEXT}"
    field = ".".join(str(x) for x in loc)
    if first["type"] == "missing":
        return f"field {field}: missing"
    got = json.dumps(first["input"], ensure_ascii=False, default=str)
    return f"field {field}: {msg} (got {got[:60] + '...' if len(got) > 60 else got})"


def parse_record_line(line: str | bytes, where: str = "<string>") -> TrialRecord:
    """Validate one JSON line against the schema.

    ``line`` as read from a file (bytes) must be valid UTF-8, as every line perceptbench
    writes is: invalid bytes (e.g. in a raw answer) are not replaced silently but refused.
    Raises :class:`RecordError` naming ``where`` (file:line) and the offending field, or the
    first invalid byte and its column.
    """
    if isinstance(line, (bytes, bytearray)):
        try:
            line = bytes(line).decode("utf-8")
        except UnicodeDecodeError as e:
            raise RecordError(f"{where}: not valid UTF-8 (byte 0x{line[e.start]:02x} at column {e.start + 1}); "
                              "perceptbench writes UTF-8 only: the file was damaged or not written by it") from None
    try:
        if line.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", line, 0)
        obj = _decode(line)
    except json.JSONDecodeError as e:
        at = "" if e.msg.endswith(" at") else " at"  # "Unterminated string starting at" names its column itself
        raise RecordError(f"{where}: not valid JSON ({e.msg}{at} column {e.colno})") from None
    except _DuplicateKey:
        obj, dups = _decode_marking(line)
        field = _vsi_duplicate(obj.get("run_meta") if isinstance(obj, dict) else None, dups)
        if field is not None:
            raise RecordError(f"{where}: field {field}: {_TWICE}") from None
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: a record must be a JSON object")
    missing = [f for f in SCHEMA_FIELDS if f not in obj]
    extra = [f for f in obj if f not in SCHEMA_FIELDS]
    if missing or extra:
        raise RecordError(f"{where}: " + "; ".join(f"{what} fields {names}" for what, names in
                                                  (("missing", missing), ("unknown", extra)) if names))
    try:
        rec = TrialRecord.model_validate(obj)
    except ValidationError as e:
        raise RecordError(f"{where}: {_validation_problem(e, obj)}") from None
    problem = vsi_meta_problem(obj["run_meta"], obj["readout"])
    if problem is not None:
        raise RecordError(f"{where}: field {problem[0]}: {problem[1]}")
    return rec


class _DuplicateKey(Exception):
    """A JSON object of the line holds a key twice (raised while decoding)."""


def _once(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _DuplicateKey()
    return d


_DECODER = json.JSONDecoder(object_pairs_hook=_once)
"""Decodes a line as :func:`json.loads` does, raising :class:`_DuplicateKey` at a key given twice
(built once: ``json.loads`` with a hook would build a decoder per line)."""


def _decode(text: str) -> Any:
    """``text`` decoded as :func:`json.loads` decodes it; raises :class:`_DuplicateKey` at a key given
    twice where the VSI line rule could refuse it: a text without ``vsi`` in it, spelled plainly or
    through a ``\\u`` escape, has no ``vsi`` key, and takes :func:`json.loads` itself (the hook of
    :data:`_DECODER` is a Python call per JSON object: ~7 us of a ~25 us line)."""
    if "vsi" in text or "\\u" in text:
        return _DECODER.decode(text)
    return json.loads(text)


_TWICE = ("the key appears twice in one object (a damaged line: JSON readers differ in which value they keep; "
          "perceptbench writes each key once)")


def _decode_marking(text: str) -> tuple[Any, dict[int, tuple[dict, list]]]:
    """(``text`` decoded as :func:`json.loads` decodes it, keeping the last of a repeated key; per
    object holding a key twice, ``id -> (the object, kept alive so no id is reused; the keys
    repeated)``)."""
    dups: dict[int, tuple[dict, list]] = {}

    def mark(pairs: list) -> dict:
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: set = set()
            dups[id(d)] = (d, [k for k, _ in pairs if k in seen or seen.add(k)])
        return d

    return json.JSONDecoder(object_pairs_hook=mark).decode(text), dups


def _vsi_duplicate(meta: Any, dups: dict) -> str | None:
    """The field the VSI line rule refuses for a repeated key in ``meta`` (a record's ``run_meta``
    decoded by :func:`_decode_marking`, with its ``dups``): ``run_meta.vsi`` when ``vsi`` is given
    twice, ``run_meta.vsi.KEY`` for the first key ``vsi`` gives twice; None for repeated keys
    elsewhere (read as ``json.loads`` reads them, the last value, as they always were)."""
    if not isinstance(meta, dict):
        return None
    if "vsi" in dups.get(id(meta), (None, []))[1]:
        return "run_meta.vsi"
    vsi = meta.get("vsi")
    if isinstance(vsi, dict) and id(vsi) in dups:
        return "run_meta.vsi." + dups[id(vsi)][1][0]
    return None


def run_meta_problem(text: str) -> tuple[Any, tuple[str, str] | None]:
    """(a record's ``run_meta`` decoded from its JSON text as :func:`json.loads` decodes it, the VSI
    line rule's ``(field, what is wrong)`` for it or None): :func:`vsi_meta_problem` and the
    repeated keys :func:`parse_record_line` refuses, for a reader that holds ``run_meta`` as text
    (``export``'s columnar read, :func:`perceptbench.reports.export.records_arrow`)."""
    try:
        meta = _decode(text)
    except _DuplicateKey:
        meta, dups = _decode_marking(text)
        field = _vsi_duplicate(meta, dups)
        if field is not None:
            return meta, (field, _TWICE)
    return meta, vsi_meta_problem(meta) if isinstance(meta, dict) else None


class TornTailWarning(UserWarning):
    """A records file whose final line has no newline (a write torn by a crash): the line is
    left out.  The message is the one :func:`check_file` reports for it
    (``FILE:LINE: incomplete final line (torn write)``); the CLI prints it as a warning."""


def _torn_message(path: Path, lineno: int) -> str:
    return f"{path}:{lineno}: incomplete final line (torn write)"


def scan_records(path: str | os.PathLike) -> Iterator[tuple[int, TrialRecord | None, str | None]]:
    """The one validating walk over a records file: ``(line number, record, None)`` for each
    valid line, ``(line number, None, message)`` for each problem, in file order.

    Problems, each a one-line message naming the file, line and field: a line that is not
    valid JSON, not a JSON object, lacks or adds fields, or fails a field's type
    (:func:`parse_record_line`); a duplicated ``trial_id`` (naming the first line); a final
    line without its newline that is not a whole valid record (torn write).  A final line that
    lacks only its newline (a file edited or concatenated by hand) is a record like any other:
    perceptbench writes each line and its newline in one ``write``, so a complete record is
    never a torn one.  Blank lines are skipped.  Raises :class:`RecordError` for a missing
    file."""
    path = Path(path)
    if not path.exists():
        raise RecordError(f"{path}: no such records file")
    lines = path.read_bytes().split(b"\n")
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            rec = parse_record_line(raw, f"{path}:{lineno}")
        except RecordError as e:
            # the last line, without its newline, is a write a crash cut short
            yield lineno, None, _torn_message(path, lineno) if lineno == len(lines) else str(e)
            continue
        if rec.trial_id in seen:
            yield lineno, None, (f"{path}:{lineno}: duplicate trial_id {rec.trial_id!r} "
                                 f"(first at line {seen[rec.trial_id]})")
            continue
        seen[rec.trial_id] = lineno
        yield lineno, rec, None


def check_file(path: str | os.PathLike, max_errors: int = 50, *,
               task_problem: Callable[[str], str | None] | None = None,
               record_problem: Callable[[TrialRecord], str | None] | None = None) -> tuple[int, list[str], int]:
    """Check every line of a records file; returns (valid record count, the first
    ``max_errors`` problem messages, the total number of problems).

    Unlike :func:`read_records` it does not stop at the first problem: each problem of
    :func:`scan_records` (the same messages :func:`read_records` raises), mixed
    ``run_meta.seed`` per task, and a file without a single record (an empty file is not a
    run) is reported.  The task rules, given by the caller that knows the tasks (``validate``:
    the task registry), are applied too: ``task_problem(task_id)`` once per task (e.g. an
    unknown task: one problem, ``FILE:LINE`` of its first record and how many records it has),
    ``record_problem(record)`` per record of a task without one (``FILE:LINE: message``); a
    record either rule refuses is not counted valid."""
    path = Path(path)
    errors: list[str] = []
    seeds: dict[str, set[int]] = {}
    refused: dict[str, tuple[int, str, list[int]]] = {}  # task -> (first line, why, [records])
    checked: set[str] = set()
    n_ok = 0
    for lineno, rec, problem in scan_records(path):
        if problem is not None:
            errors.append(problem)
            continue
        seeds.setdefault(rec.task_id, set()).add(rec.run_meta.seed)
        task = rec.task_id
        if task_problem is not None and task not in checked:
            checked.add(task)
            why = task_problem(task)
            if why:
                refused[task] = (lineno, why, [0])
        if task in refused:
            refused[task][2][0] += 1
            continue
        if record_problem is not None:
            why = record_problem(rec)
            if why:
                errors.append(f"{path}:{lineno}: {why}")
                continue
        n_ok += 1
    for task, (lineno, why, (n,)) in refused.items():
        errors.append(f"{path}:{lineno}: task_id {task!r} ({n} record{'s' if n != 1 else ''}): {why}")
    for task, ss in seeds.items():
        if len(ss) > 1:
            errors.append(f"{path}: task {task} mixes run_meta.seed values {sorted(ss)}")
    if n_ok == 0 and not errors:
        errors.append(f"{path}: holds no trial records (empty file)")
    return n_ok, errors[:max_errors], len(errors)


def validate_file(path: str | os.PathLike, max_errors: int = 50) -> tuple[int, list[str]]:
    """(valid record count, up to ``max_errors`` problem messages); see :func:`check_file`,
    which also returns how many problems there are in all."""
    n_ok, errors, _ = check_file(path, max_errors)
    return n_ok, errors


def columnar_readable(path: str | os.PathLike) -> bool:
    """Whether a columnar reader (duckdb's JSON reader: :func:`perceptbench.record_table.read_columns`,
    :func:`perceptbench.reports.export.records_arrow`) may take the file; False sends it to the
    validating reader, which reads it or names its bad line: an empty file, a torn final line
    (:func:`has_torn_tail`), or a UTF-8 byte-order mark at its start (duckdb skips it, the
    validating reader refuses line 1 as :func:`json.loads` does)."""
    with open(path, "rb") as f:
        if f.read(3) == b"\xef\xbb\xbf":
            return False
    return os.path.getsize(path) > 0 and not has_torn_tail(path)


def has_torn_tail(path: str | os.PathLike) -> bool:
    """True when the file's last line has no newline (a write torn by a crash, or a whole
    record that lacks only its newline: :func:`scan_records` tells the two apart).  Reads only
    the last byte."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def read_numbered_records(path: str | os.PathLike, *,
                          allow_torn_tail: bool = True) -> list[tuple[int, TrialRecord]]:
    """:func:`read_records` with each record's line number (1-based, as :func:`scan_records` and
    every message naming ``FILE:LINE`` count them): ``[(line, record), ...]`` in file order.
    The same reading, warnings and errors as :func:`read_records`."""
    import warnings

    records: list[tuple[int, TrialRecord]] = []
    for lineno, rec, problem in scan_records(path):
        if problem is None:
            records.append((lineno, rec))
        elif allow_torn_tail and problem == _torn_message(Path(path), lineno):
            warnings.warn(TornTailWarning(problem), stacklevel=3)
        else:
            raise RecordError(problem)
    return records


def read_records(path: str | os.PathLike, *, allow_torn_tail: bool = True) -> list[TrialRecord]:
    """Read and validate every record of a JSONL file (:func:`scan_records`).

    A final line without its newline that is not a whole valid record is a write torn by a
    crash: with ``allow_torn_tail`` it is left out (it was never a complete record) and a :class:`TornTailWarning` carrying
    :func:`check_file`'s message for it is issued; otherwise it is an error.  Any other
    problem raises :class:`RecordError` with :func:`check_file`'s message for that line.
    (:func:`read_numbered_records` gives each record's line number too.)"""
    return [rec for _, rec in read_numbered_records(path, allow_torn_tail=allow_torn_tail)]


_RECORD_START = b'{"trial_id":'
"""How every line :meth:`TrialRecord.to_json_line` writes begins (the schema's first field)."""


class RecordStore:
    """Append-only JSONL store of trial records, safe against kill -9.

    Each :meth:`append` validates the records, writes whole lines with one ``write`` on an
    ``O_APPEND`` descriptor and ``fsync``s, so a crash leaves at most one torn final line.
    Opening an existing file validates it, ends a final record that lacks only its newline with
    one, truncates a torn final line (never a complete record, and only when every complete line is a valid record and the torn one begins like
    a record: a foreign file is refused untouched), and loads the finished ``trial_id``s so a
    rerun skips them.  An exclusive
    ``flock`` (:class:`~perceptbench.core.rundir.RecordsLock`, the records lock that
    ``run.json`` is written under) keeps two processes from writing the same file.

    Raises :class:`RecordError` for a corrupt line that is not the torn tail, and
    ``RuntimeError`` when another process holds the lock.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = RecordsLock(self.path)  # the records lock run.json is written under
        self._fd = self._lock.fd
        try:
            self.truncated_bytes = self._repair_tail()
            self.done: set[str] = {r.trial_id for r in read_records(self.path, allow_torn_tail=False)}
        except BaseException:
            # a corrupt file must not leave the lock held: a retry in this process would
            # otherwise be told that another process is writing the file
            self.close()
            raise

    def _repair_tail(self) -> int:
        """Cut a torn final line, only from a file that is perceptbench's: every complete line a
        valid record and the torn line the start of one (``{"trial_id":``, as
        :meth:`TrialRecord.to_json_line` writes it).  Anything else raises RecordError naming
        the file and line, with the file left untouched."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            return 0
        with open(self.path, "rb") as f:
            data = f.read()
        if data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        tail = data[keep:].strip()
        lineno = data.count(b"\n") + 1
        tail_is_record = False
        for at, _, problem in scan_records(self.path):
            if problem is not None and problem != _torn_message(self.path, lineno):
                raise RecordError(problem + " (nothing was changed in the file)")
            tail_is_record = at == lineno and problem is None
        if tail_is_record:  # a whole record that lacks only its newline: completed, never cut
            os.write(self._fd, b"\n")
            os.fsync(self._fd)
            return 0
        if not (tail.startswith(_RECORD_START) or _RECORD_START.startswith(tail)):  # torn anywhere in a record
            raise RecordError(f"{self.path}:{lineno}: the last line has no newline and is not the start of a trial "
                              "record: this is not a records file a crash left behind; it is left as it is")
        os.ftruncate(self._fd, keep)
        os.fsync(self._fd)
        return size - keep

    def append(self, records: Iterable[TrialRecord]) -> int:
        """Validate and append records whose trial_id is not yet stored; returns how many.

        Raises :class:`RecordError` naming the file, the trial and the model when a record cannot
        be serialised (e.g. text UTF-8 cannot encode); then nothing of the batch is written and
        its trials stay pending."""
        lines, ids = [], []
        for rec in records:
            if not isinstance(rec, TrialRecord):
                rec = TrialRecord.model_validate(rec)
            if rec.trial_id in self.done or rec.trial_id in ids:
                continue
            try:
                lines.append((rec.to_json_line() + "\n").encode("utf-8"))
            except (ValueError, TypeError) as e:  # UnicodeEncodeError is a ValueError
                raise RecordError(f"{self.path}: cannot write the record of trial {rec.trial_id!r} "
                                  f"(model {rec.model!r}): {type(e).__name__}: {e}; nothing of its batch "
                                  "was written") from None
            ids.append(rec.trial_id)
        if not lines:
            return 0
        payload = b"".join(lines)
        view = memoryview(payload)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)
        self.done.update(ids)
        return len(lines)

    def close(self) -> None:
        if self._fd >= 0:
            self._lock.release()
            self._fd = -1

    def __enter__(self) -> "RecordStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[TrialRecord]:
        return iter(read_records(self.path))
