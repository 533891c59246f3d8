"""``perceptbench render``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .errors import console, fail
from .out_checks import check_out


def render(
    task: str = typer.Argument(..., metavar="TASK", help="Task id, e.g. salbench.visual_referring.syn@n=30"),
    out: Optional[Path] = typer.Option(None, help="Folder for the PNGs and index.json (default: a folder per task "
                                                  "and seed under the perceptbench cache, printed at the end)."),
    limit: int = typer.Option(12, help="How many test stimuli to render."),
    seed: int = typer.Option(0, help="The run seed: stimuli, splits and position shuffles are those a `run` with "
                                     "this --seed shows."),
) -> None:
    """Write a task's test stimuli as a VLM is shown them.

    OUT/STIMULUS_ID.png, the prompt text beside it (STIMULUS_ID.prompt.txt, with the few-shot
    examples' answers when the task shows examples) and each few-shot example's image
    (STIMULUS_ID.exampleN.png, in the order shown); never outside OUT."""
    import json

    from ..core.paths import PathEscapeError, confine
    from ..seeding import image_sha256
    from ..sources import SourceError
    from ..tasks import get_task

    if out is not None:
        check_out(out, "dir")
    try:
        t = get_task(task)
        stimuli = [s for s in t.stimuli(seed) if s.split == "test" and not s.meta.get("no_image")][:limit]
    except (KeyError, ValueError, SourceError) as e:
        fail(e)
    if out is None:
        import re

        from ..sources.fetch import cache_dir

        out = cache_dir() / "stimuli" / f"{re.sub(r'[^A-Za-z0-9._=@,-]+', '_', t.task_id)}-seed{seed}"
    try:  # ids come from annotation files: every written path stays inside --out, checked before writing
        paths = [confine(out, f"{s.stimulus_id}.png", f"{t.task_id}: stimulus id {s.stimulus_id!r}")
                 for s in stimuli]
    except PathEscapeError as e:
        fail(e)
    try:  # the whole input of each trial: examples first, then the query, and the prompt text
        requests = [t.vlm_request(s, seed) for s in stimuli]
    except (ValueError, SourceError) as e:
        fail(e)
    out.mkdir(parents=True, exist_ok=True)
    index, n_png = [], 0
    for s, path, (images, prompt, extra) in zip(stimuli, paths, requests):
        img = s.render()
        path.parent.mkdir(parents=True, exist_ok=True)
        img.save(path)
        examples = []
        for i, ex in enumerate(images[:-1], 1):  # the last image is the query itself
            ex_path = path.with_name(f"{path.stem}.example{i}.png")
            ex.save(ex_path)
            examples.append(ex_path.name)
        prompt_path = path.with_name(f"{path.stem}.prompt.txt")
        prompt_path.write_text(prompt + "\n", encoding="utf-8")
        n_png += 1 + len(examples)
        index.append({"stimulus_id": s.stimulus_id, "ground_truth": s.ground_truth,
                      "manipulated_value": s.manipulated_value, "stimulus_sha256": image_sha256(img),
                      "prompt_file": prompt_path.name, "example_images": examples,
                      **{k: v for k, v in extra.items() if isinstance(v, (str, int, float, list))},
                      **{k: v for k, v in s.meta.items() if isinstance(v, (str, int, float, list))}})
    (out / "index.json").write_text(json.dumps(index, indent=1))
    shots = f" and {n_png - len(index)} few-shot example PNGs" if n_png > len(index) else ""
    console.print(f"wrote {len(index)} stimulus PNGs{shots}, each with its prompt (.prompt.txt), and index.json to {out}")
