"""``perceptbench show``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ..core.rundir import RunDir, atomic_write
from ..core.urls import redact_urls_in
from .errors import TornTailsAsWarnings, console, fail


def show(
    run_dir: Path = typer.Argument(..., metavar="RUN", help="Run directory (holds records.jsonl)."),
    trial: Optional[list[str]] = typer.Argument(
        None, metavar="[TRIAL_ID | N | TASK STIMULUS MODEL [REP]]",
        help="The trial: its trial_id (e.g. 'closure.nat.silhouette|silh_bear1|mymodel|rep0', quoted), N (its "
             "line in the listing, from 1), or its task, stimulus and model ids as separate words (and the rep, "
             "default 0: no quoting needed).  Omit it to list the run's model trial ids."),
) -> None:
    """Print one trial, or list a run's model trial ids.

    With a trial: what could not be rebuilt (and why) first, then its prompt text, raw output,
    parse metadata, the path of its rendered stimulus image (written to RUN_DIR/stimuli/ if
    needed), on a VSI trial the VSI it enters against each partner trial, and the human answers to the same stimulus in the run (each observer's response,
    the modal answer, the per-stimulus human accuracy; answers derived from perceptual kernels
    apart, labelled so, the task's reference kernel left out of their figures).  Without it: the model trial ids, one
    per line.  Imports no torch."""
    import json

    from ..core.conditions import DEFAULT_CONDITION
    from ..records import VSI_READOUTS, RecordError, read_records
    from ..seeding import image_sha256, text_hash
    from ..sources import SourceError
    from ..tasks import get_task

    path = RunDir(run_dir).records
    try:
        with TornTailsAsWarnings():  # a torn last line: the one warning line the other commands print
            recs = read_records(path)
    except RecordError as e:
        fail(e)
    if not recs:
        fail(f"{path}: holds no trial records (empty file); nothing to show")
    model_ids = [r.trial_id for r in recs if r.model_family != "human"]
    if not trial:
        for t in model_ids:
            console.print(escape(t), soft_wrap=True, highlight=False)
        console.print(f"{len(model_ids)} model trials in {path} (human records left out); show one with: "
                      f"perceptbench show {run_dir} 'TRIAL_ID' (quoted), or N (its line above, from 1), or "
                      "TASK STIMULUS MODEL [REP]", highlight=False, soft_wrap=True)
        return
    trial_id = _trial_id(trial, model_ids, path)
    rec = next((r for r in recs if r.trial_id == trial_id), None)
    if rec is None:
        # suggest model trials first (what the listing shows), human records only if nothing else matches
        model_ids = [r.trial_id for r in recs if r.model_family != "human"]
        near = ([t for t in model_ids if trial_id in t] or [r.trial_id for r in recs if trial_id in r.trial_id]
                or model_ids or [r.trial_id for r in recs])
        fail(f"{path}: no trial {trial_id!r}; e.g. {', '.join(repr(t) for t in near[:4])} ({len(model_ids)} model "
              f"trials; list them with: perceptbench show {run_dir})")
    meta = dict(rec.run_meta.model_extra or {})
    prompt, images, note = None, [], ""
    asked = rec.readout == "vlm_prompt" or rec.readout in VSI_READOUTS  # a VLM asked with a prompt
    # a condition that shows no image (image_withheld): no stimulus image to write or to name
    no_image = ("condition" in meta and not meta.get("image_sha256s") and meta.get("stimulus_sha256") is None
                and not (meta.get("vsi") or {}).get("image_sha256"))
    try:
        task = get_task(rec.task_id, meta.get("data_location"))  # the image folder the trial read
        stimuli = task.stimuli(rec.run_meta.seed)
        if meta.get("condition", DEFAULT_CONDITION) != DEFAULT_CONDITION:  # its own stimuli ({sample}~image_withheld)
            from ..respond.base import trial_stimuli

            stimuli = trial_stimuli(task, stimuli, meta["condition"])
        stim = next((s for s in stimuli if s.stimulus_id == rec.stimulus_id), None)
        if no_image:
            if stim is not None and asked:
                prompt = task.vlm_request(stim, rec.run_meta.seed)[1]
        elif stim is None:
            note = f"stimulus {rec.stimulus_id} is not in {rec.task_id} at seed {rec.run_meta.seed} any more"
        elif asked:
            imgs, prompt, _ = task.vlm_request(stim, rec.run_meta.seed)
            images = list(imgs)
        else:
            images = [stim.render()]
            if rec.model_family != "human":
                from ..readouts.encoder import READOUT_SPECS

                prompt = READOUT_SPECS.get(rec.readout)
    except (KeyError, ValueError, SourceError, OSError) as e:
        note = f"cannot rebuild the stimulus: {e}"
    console.print(f"[bold]{escape(rec.trial_id)}[/bold]", highlight=False)
    for k in ("task_id", "stimulus_id", "model", "model_family", "readout", "response", "ground_truth", "correct",
              "prompt_id", "prompt_hash"):
        console.print(f"{k}: {escape(json.dumps(getattr(rec, k), ensure_ascii=False))}", highlight=False)
    console.print(f"model_version: {escape(redact_urls_in(rec.run_meta.model_version))}  seed: {rec.run_meta.seed}  "
                  f"run_id: {escape(rec.run_meta.run_id)}", highlight=False)
    if note:  # said up front: what is missing below, and why
        missing = "the prompt and the stimulus image" if asked else "the stimulus image"
        console.print(f"[yellow]not rebuilt:[/yellow] {missing} ({escape(note)})", highlight=False, soft_wrap=True)
    if prompt is not None:
        if rec.prompt_hash is None:
            check = " (re-built now; the record has no prompt_hash to check it against)"
        elif text_hash(prompt) == rec.prompt_hash:
            check = f" (re-built now; matches the record's prompt_hash {rec.prompt_hash})"
        else:
            check = (" [red](re-built now; its hash differs from the record's prompt_hash: the prompt changed "
                     "since this trial ran)[/red]")
        console.print(f"prompt{check}:", highlight=False)
        console.print(escape(prompt), highlight=False, soft_wrap=True)
    console.print("raw_output:", highlight=False)
    console.print(escape(_visible(str(rec.raw_output))), highlight=False, soft_wrap=True)
    console.print(f"parse: {escape(json.dumps(meta.get('parse'), ensure_ascii=False))}", highlight=False)
    for k in ("condition", "skipped", "fewshot_stimulus_ids", "mixed_resume", "stimulus_sha256"):
        if k in meta:
            console.print(f"{k}: {escape(json.dumps(meta[k], ensure_ascii=False))}", highlight=False)
    if images:
        safe = lambda x: "".join(c if c.isalnum() or c in "._-=" else "_" for c in x)  # noqa: E731
        folder = RunDir(run_dir).stimuli / safe(rec.task_id)
        folder.mkdir(parents=True, exist_ok=True)
        for i, img in enumerate(images):
            last = i == len(images) - 1
            p = folder / (f"{safe(rec.stimulus_id)}.png" if last else f"{safe(rec.stimulus_id)}.example{i + 1}.png")
            if not p.exists():
                with atomic_write(p, "wb") as f:
                    img.save(f, format="PNG")
            label = "stimulus image" if last else f"few-shot example {i + 1} image"
            check = ""
            if last and meta.get("stimulus_sha256"):
                check = (" (pixels match the record's stimulus_sha256)" if image_sha256(img) == meta["stimulus_sha256"]
                         else " [red](pixels differ from the record's stimulus_sha256)[/red]")
            console.print(f"{label}: {escape(str(p))}{check}", highlight=False)
    if no_image:
        console.print(f"stimulus image: none (condition {escape(str(meta['condition']))}: the question was asked "
                      "without an image)", highlight=False)
    if rec.readout in VSI_READOUTS:
        _print_vsi(rec, recs)
    _print_human_answers(rec, recs)


def _trial_id(words: list[str], model_ids: list[str], path: Path) -> str:
    """The trial id that ``show``'s words name: one word is a trial id or N (1-based line of the
    listing of ``model_ids``); three or four are TASK STIMULUS MODEL [REP].  Exits with a
    one-line error for an N out of range or another number of words."""
    if len(words) == 1:
        w = words[0]
        if w.isdigit():
            if not 1 <= int(w) <= len(model_ids):
                fail(f"{path}: no trial number {w}; the listing has {len(model_ids)} model trials (1 to "
                     f"{len(model_ids)})")
            return model_ids[int(w) - 1]
        return w
    if len(words) in (3, 4):
        rep = words[3] if len(words) == 4 else "0"
        rep = rep if rep.startswith("rep") else f"rep{rep}"
        return "|".join([*words[:3], rep])
    fail(f"show takes TRIAL_ID, N, or TASK STIMULUS MODEL [REP]; got {len(words)} words: {' '.join(words)}")
    raise AssertionError  # fail exits


def _print_vsi(rec, recs) -> None:
    """The VSI that the VSI trial ``rec`` enters: for a perturbed trial (a blur, or the question
    asked without the image) KL(p_clean || p_this) in nats against its model's clean trial of the
    same sample; for a clean trial, that of each of its perturbed trials (seed 002 §2, Eq. 1;
    :func:`perceptbench.vsi.samples.vsi_of_records`, the scorer's own function on the same two
    ``run_meta.vsi`` distributions), and whether the top token changed.  The scorer leaves flagged
    pairs out of its cells (its ``n_flagged`` rows say how many); a pair without a usable
    distribution (a skipped trial) is said so."""
    from ..core.conditions import parse_respondent_label
    from ..vsi.samples import vsi_of_records

    def vsi(r) -> dict:
        m = (r.run_meta.model_extra or {}).get("vsi")
        return m if isinstance(m, dict) else {}

    sample = vsi(rec).get("sample_id")
    if sample is None:
        return
    base = parse_respondent_label(rec.model)[0]
    same = [r for r in recs if r.task_id == rec.task_id and r.rep == rec.rep and r.trial_id != rec.trial_id
            and vsi(r).get("sample_id") == sample]
    if rec.readout == "vlm_vsi_clean":
        pairs = [(rec, r) for r in same if r.readout == "vlm_vsi_perturbed" and parse_respondent_label(r.model)[0] == base]
    else:
        pairs = [(r, rec) for r in same if r.readout == "vlm_vsi_clean" and r.model == base]
    if not pairs:
        console.print(f"VSI: no {'perturbed' if rec.readout == 'vlm_vsi_clean' else 'clean'} trial of sample "
                      f"{escape(str(sample))} for {escape(base)} in this run to pair with", highlight=False)
    for clean, pert in pairs:
        other = pert if pert is not rec else clean
        what = f"{vsi(pert).get('condition')}, sigma={vsi(pert).get('sigma_px')}"
        try:
            v, changed = vsi_of_records(vsi(clean), vsi(pert))
        except (KeyError, IndexError, TypeError, ValueError) as e:
            console.print(f"VSI against {escape(other.trial_id)} ({what}): none, no usable distribution "
                          f"({escape(type(e).__name__)}: {escape(str(e))[:80]})", highlight=False, soft_wrap=True)
            continue
        console.print(f"VSI against {escape(other.trial_id)} ({what}): {v:.4f} nats (KL clean || perturbed); "
                      f"top token {'changed' if changed else 'unchanged'}", highlight=False, soft_wrap=True)


def _print_human_answers(rec, recs) -> None:
    """The human answers in the run to ``rec``'s stimulus: each observer's response, the modal answer
    (most frequent non-null response; ties all named) and the per-stimulus human accuracy (share of
    correct answers among the scored ones).  Answers derived from perceptual kernels (readout
    ``human_kernel``, Demiralp et al. 2014: each kernel's odd one out, not a human trial) are printed
    apart and labelled so; the task's reference kernel (its ``kernel`` setting) is the ground truth,
    so it is named and left out of their modal answer and of their agreement with it.  Says so when
    the run holds none."""
    humans = [r for r in recs if r.model_family == "human" and r.task_id == rec.task_id
              and r.stimulus_id == rec.stimulus_id and r.trial_id != rec.trial_id]
    kernels = [h for h in humans if h.readout == "human_kernel"]
    people = [h for h in humans if h.readout != "human_kernel"]
    if not people:
        # a kernel task's human reference is its kernels' answers, which the run summary counts as
        # human records: say where they are, so "none" does not read as a contradiction
        console.print("human answers to this stimulus: none in this run"
                      + (" (the task's human reference is the perceptual kernels' answers below, which the run "
                         "counts among its human records)" if kernels else ""), highlight=False, soft_wrap=True)
    else:
        _print_answers("human answers to this stimulus", people)
        _print_modal_and_accuracy(people, "modal human answer", "human accuracy on this stimulus")
    if kernels:
        ref = _reference_kernel(rec.task_id)
        console.print(f"kernel-derived answers to this stimulus ({len(kernels)}; each perceptual kernel's odd one "
                      "out, Demiralp et al. 2014, not human trials"
                      + (f"; reference kernel {escape(ref)} = the ground truth" if ref else "") + "): "
                      + ", ".join(f"{escape(h.model)}={escape(_answer(h.response))}"
                                  + (" (reference)" if h.model == ref else "") for h in kernels),
                      highlight=False, soft_wrap=True)
        others = [h for h in kernels if h.model != ref]
        if ref and others:
            _print_modal_and_accuracy(
                others, f"modal answer of the {len(others)} other kernels",
                f"other kernels' agreement with the reference kernel ({escape(ref.removeprefix('human:kernel-'))})",
                "agreeing")


def _answer(v) -> str:
    """A response as ``show`` prints it (``null`` for a null response)."""
    return "null" if v is None else str(v)


def _print_answers(label: str, recs) -> None:
    """``label (n): model=response, ...`` on one line."""
    console.print(f"{label} ({len(recs)}): " + ", ".join(f"{escape(h.model)}={escape(_answer(h.response))}"
                                                         for h in recs), highlight=False, soft_wrap=True)


def _print_modal_and_accuracy(recs, modal_label: str, accuracy_label: str, correct_word: str = "correct") -> None:
    """The modal answer of ``recs`` (most frequent non-null response; ties all named, ``top of n``)
    and the share of correct answers among the scored ones (``correct`` not null)."""
    from collections import Counter

    counts = Counter(_answer(h.response) for h in recs if h.response is not None)
    if counts:
        top = max(counts.values())
        modal = [v for v, c in counts.items() if c == top]
        console.print(f"{modal_label}: {escape(' / '.join(modal))} ({top} of {len(recs)})", highlight=False)
    scored = [h.correct for h in recs if h.correct is not None]
    if scored:
        console.print(f"{accuracy_label}: {sum(scored) / len(scored):.2f} "
                      f"({sum(scored)} of {len(scored)} {correct_word})", highlight=False)


def _reference_kernel(task_id: str) -> str | None:
    """``human:kernel-<name>`` of the kernel a kernel odd-one-out task takes as its ground truth
    (the task's ``kernel`` setting, :class:`~perceptbench.tasks.gestalt.MarkKernelTask`), or None
    where the task is not known here or has no such setting."""
    from ..tasks import get_task

    try:
        name = get_task(task_id).params.get("kernel")
    except (KeyError, ValueError):
        return None
    return None if name is None else f"human:kernel-{name}"


def _visible(text: str) -> str:
    """``text`` with control characters other than newline and tab written as escapes
    (``\\x04``), so a model's raw bytes never act on the terminal."""
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in text)
