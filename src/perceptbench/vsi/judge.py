"""HallusionBench's judge reading: a judge model reads each free-text answer against the
benchmark's reference answer and says whether it agrees (opt in: ``perceptbench run --judge
SPEC``).  The rule-based reading (:func:`perceptbench.vsi.native.hallusionbench_correct`) stays the
default; the judge's verdicts give a second, named set of rows (``hallusionbench.*@judge``,
:func:`perceptbench.vsi.native.hallusionbench_judge_rows`), never mixed with it.

Source: tianyi-lab/HallusionBench ``utils.py`` ``evaluate_by_chatgpt`` (commit 744007c), which
asks GPT-4 about **every** answer, not only the ones a rule cannot read, with the prompt of
:data:`JUDGE_TEMPLATE` (question, the release's ``gt_answer_details`` as the reference answer,
the model's answer), and reads the reply by substring: "incorrect" -> 0, else "correct" -> 1,
else 2 (unclear) (:func:`parse_verdict`).  perceptbench does the same, so the ``@judge`` rows are
one reading throughout: each answer the HallusionBench rows score (every image respondent's clean
answers, and its ``[image_withheld]`` answers to the questions asked without an image) is judged.
Differences: the judge is any perceptbench model spec that answers text (``openai:gpt-4o``, an
``openai-compatible:URL#MODEL`` server, an ``hf:`` VLM asked without an image), asked greedily
(temperature 0 where the provider has one; the benchmark leaves GPT-4's default) with at most
:data:`JUDGE_MAX_NEW_TOKENS` new tokens; a request that fails for good (timeout, HTTP error after
the adapter's retries) is recorded with no reply and verdict null, where the benchmark's loop
retries forever.  The benchmark's second GPT-4 call (``check_same_by_chatgpt``, used only for its
LH/VI error analysis, not for aAcc/fAcc/qAcc) is not made.

Sidecar: ``judgments.jsonl`` in the run directory (:data:`JUDGMENTS`), one JSON object per
judged answer, appended and fsynced batch by batch under an exclusive lock; the records file is
never touched.  Fields: ``trial_id``, ``task_id``, ``stimulus_id``, ``model`` (the respondent
judged), ``answer_hash`` (hash of the answer text judged), ``judge`` (short name), ``judge_spec``
(the ``--judge`` argument, URL credentials redacted), ``judge_version`` (the judge's
``model_version``: weights hash, commit or pinned API version), ``judge_settings`` (its generation
settings), ``judge_template_hash``, ``judge_prompt_hash``, ``judge_prompt`` (the filled prompt),
``reply`` (raw text, null when none came), ``verdict`` (``correct`` / ``incorrect`` /
``unclear``, null without a reply), ``error`` (why there is no reply), ``package_version``.  A
rerun with the same ``--judge`` resumes: judged answers are not asked again; answers whose latest
line has no reply are asked again (a new line; the old one stays).  A file written by another
judge (name, version or template) is refused before anything is asked: one run directory holds
one judge reading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Sequence

from ..core.urls import redact_urls_in
from ..records import TrialRecord
from ..seeding import text_hash
from .native import JUDGE_VERDICTS, answers_of_records, ext, hallusionbench_answers

JUDGMENTS = "judgments.jsonl"
"""The judge's sidecar file in a run directory (module docstring)."""

JUDGE_TEMPLATE = (
    "Imagine you are an intelligent teacher. Thoroughly read the question, reference answer and the prediction "
    "answer to ensure a clear understanding of the information provided. Assess the correctness of the "
    "predictions. If the prediction answer does not conflict with the reference answer, please generate "
    "\u201ccorrect\u201d. If the prediction answer conflict with the reference answer, please generate "
    "\u201cincorrect\u201d. If the prediction answer is unclear about the answer, please generate \"unclear\". "
    "\n\n Question:{question}\nReference answer: {reference}\nPrediction answer:{prediction}\nOutput:")
"""HallusionBench's judge prompt, word for word (``utils.py`` ``evaluate_by_chatgpt``, the
string it builds per sample; its spacing kept, e.g. no space after ``Question:``)."""

JUDGE_TEMPLATE_HASH = text_hash(JUDGE_TEMPLATE)

JUDGE_MAX_NEW_TOKENS = 32
"""New tokens a judge reply may take (the expected reply is one word)."""

BENCHMARK = "vsi.hallusionbench"

_FIELDS = ("trial_id", "verdict", "judge", "judge_version")


def judge_prompt(question: str, reference: str, prediction: str | None) -> str:
    """The filled :data:`JUDGE_TEMPLATE`: ``question`` verbatim, ``reference`` the release's
    ``gt_answer_details``, ``prediction`` the model's raw answer (None -> empty)."""
    return JUDGE_TEMPLATE.format(question=question, reference=reference, prediction=prediction or "")


def parse_verdict(reply: str | None) -> str | None:
    """A judge reply -> ``"incorrect"`` when it holds "incorrect" (any case), else ``"correct"``
    when it holds "correct", else ``"unclear"`` (HallusionBench ``evaluate_by_chatgpt``: "0", "1",
    "2"); None (no reply: a timeout, an error) -> None."""
    if reply is None:
        return None
    low = reply.lower()
    return "incorrect" if "incorrect" in low else "correct" if "correct" in low else "unclear"


def judgments_path(run_dir: str | os.PathLike) -> Path:
    """``RUN/judgments.jsonl``."""
    return Path(run_dir) / JUDGMENTS


def read_judgments(path: str | os.PathLike) -> dict[str, dict]:
    """``{trial_id: judgment}`` from a sidecar file, the latest line of each trial winning; {}
    when the file does not exist.  A final line without its newline (a write torn by a crash) is
    left out.  Raises ValueError naming file, line and field for a line that is not a JSON object
    with ``trial_id``, ``judge``, ``judge_version`` and a ``verdict`` among
    :data:`~perceptbench.vsi.native.JUDGE_VERDICTS` or null."""
    path = Path(path)
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        lines.pop()  # torn: no newline after it
    out: dict[str, dict] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            j = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(j, dict):
            raise ValueError(f"{path}:{n}: expected a JSON object")
        for k in _FIELDS:
            if k not in j:
                raise ValueError(f"{path}:{n}: missing field {k!r}")
        if j["verdict"] not in JUDGE_VERDICTS + (None,):
            raise ValueError(f"{path}:{n}: field 'verdict' must be one of {', '.join(JUDGE_VERDICTS)} or null, "
                             f"got {j['verdict']!r}")
        out[str(j["trial_id"])] = j
    return out


def _drop_torn_tail(path: Path) -> None:
    """Cut a final line without its newline (a write torn by a crash) off ``path``."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with open(path, "r+b") as f:
        f.truncate(data.rfind(b"\n") + 1)


def pending_answers(records: Sequence[TrialRecord], task_ids: Sequence[str], no_image: dict[str, bool],
                    judged: dict[str, dict]) -> list[TrialRecord]:
    """The answers of HallusionBench tasks ``task_ids`` that the judge has still to read: every
    answer the HallusionBench rows score (:func:`perceptbench.vsi.native.hallusionbench_answers`)
    without a judgment in ``judged``, or whose latest judgment has no reply.  ``no_image``:
    task id -> its ``no_image`` setting."""
    out = []
    for tid in task_ids:
        recs = [r for r in records if r.task_id == tid]
        of_trial = {r.trial_id: r for r in recs}
        for rs, blind in hallusionbench_answers(answers_of_records(recs), no_image[tid]).values():
            for a in [*rs, *blind]:
                j = judged.get(a.trial_id)
                if j is None or j.get("reply") is None:
                    out.append(of_trial[a.trial_id])
    return out


def check_same_judge(judged: dict[str, dict], name: str, version: str | None, path: Path) -> None:
    """ValueError (one line) when ``judged`` holds a judgment by another judge (name, version or
    template) than ``name`` / ``version``: one run directory holds one judge reading."""
    for j in judged.values():
        other = (j.get("judge"), j.get("judge_version"), j.get("judge_template_hash", JUDGE_TEMPLATE_HASH))
        if other[0] != name or (version is not None and other[1] != version) or other[2] != JUDGE_TEMPLATE_HASH:
            raise ValueError(f"{path} holds judgments by judge {other[0]!r} (version {other[1]}, template "
                             f"{other[2]}); --judge {name} (version {version}, template {JUDGE_TEMPLATE_HASH}) would "
                             "mix two readings: rerun with that judge, or give a new --out; nothing was asked")


def judge_run(run_dir: str | os.PathLike, judge_arg: str, tasks: Sequence, seed: int, records: Sequence[TrialRecord],
              load_model: Callable[[str], object], batch_size: int = 8,
              announce: Callable[[str], None] | None = None) -> tuple[int, int]:
    """Ask the judge ``judge_arg`` (``[SHORT=]SPEC``, loaded with ``load_model``) about every
    answer of the HallusionBench ``tasks`` (task objects) in ``records`` still to be judged, and
    append the judgments to ``RUN/judgments.jsonl`` (module docstring).

    The question text and reference answer come from the task's loader (``task.load(seed)``).
    A batch whose requests fail for good (:class:`~perceptbench.models.api.APIError`,
    :class:`~perceptbench.models.base.PartialAnswers`: a timeout after the adapter's retries)
    records each failed answer with ``reply`` and ``verdict`` null and the error.  Returns
    (judgments written, judgments that got no reply).  Raises ValueError for a file of another
    judge (:func:`check_same_judge`) or a bad line in it, ModelLoadError when the judge cannot
    load, RuntimeError when another process writes the file."""
    from ..core.rundir import RecordsLock
    from ..core.version import __version__
    from ..models.api import APIError
    from ..models.base import PartialAnswers, VLMRequest
    from ..models.registry import parse_model_arg

    name, _ = parse_model_arg(judge_arg)
    path = judgments_path(run_dir)
    lock = RecordsLock(path)
    try:
        _drop_torn_tail(path)
        judged = read_judgments(path)
        check_same_judge(judged, name, None, path)
        no_image = {t.task_id: t.params["no_image"] == "1" for t in tasks}
        pending = pending_answers(records, [t.task_id for t in tasks], no_image, judged)
        if not pending:
            return 0, 0
        questions = {}
        for t in tasks:
            for vs in t.load(seed):
                questions[(t.task_id, vs.stimulus_id)] = vs
        if announce is not None:
            announce(f"judging {len(pending)} HallusionBench answers with {redact_urls_in(judge_arg)} ...")
        judge = load_model(judge_arg)
        version = getattr(judge, "model_version", None)
        check_same_judge(judged, name, version, path)
        common = {"judge": name, "judge_spec": redact_urls_in(judge_arg), "judge_version": version,
                  "judge_settings": dict(getattr(judge, "generation_settings", None) or {}),
                  "judge_template_hash": JUDGE_TEMPLATE_HASH, "package_version": __version__}
        written = failed = 0
        for i in range(0, len(pending), batch_size):
            chunk = pending[i:i + batch_size]
            prompts = []
            for r in chunk:
                vs = questions.get((r.task_id, r.stimulus_id.split("~")[0]))
                if vs is None:
                    raise ValueError(f"{r.task_id}: the question of {r.stimulus_id} is not in the benchmark's "
                                     "question file any more; the judge needs its text")
                ref = vs.meta.get("gt_answer_details") or ext(r).get("gt_answer_details") or r.ground_truth
                prompts.append(judge_prompt(vs.question, str(ref), r.raw_output))
            reqs = [VLMRequest((), p, JUDGE_MAX_NEW_TOKENS) for p in prompts]
            error = None
            try:
                replies = list(judge.generate(reqs, batch_size=batch_size))
            except PartialAnswers as e:
                replies, error = list(e.answers), str(e.error)
            except APIError as e:
                replies, error = [None] * len(reqs), str(e)
            lines = []
            for r, p, reply in zip(chunk, prompts, replies):
                failed += reply is None
                lines.append(json.dumps({
                    "trial_id": r.trial_id, "task_id": r.task_id, "stimulus_id": r.stimulus_id, "model": r.model,
                    "answer_hash": text_hash(r.raw_output or ""), **common, "judge_prompt_hash": text_hash(p),
                    "judge_prompt": p, "reply": reply, "verdict": parse_verdict(reply),
                    "error": None if reply is not None else redact_urls_in(error or "no reply")},
                    ensure_ascii=False) + "\n")
            os.write(lock.fd, "".join(lines).encode("utf-8"))
            os.fsync(lock.fd)
            written += len(lines)
        return written, failed
    finally:
        lock.release()
