"""Mixed records files for the scoring, report and export benchmarks (issue 25).

:func:`write_mixed` writes a ``records.jsonl`` of about ``n_target`` records drawn from every
scoring family: the real human records and synthetic VLM answers
(:func:`perceptbench.testing.synthetic_runs.synthetic_records`) of the Gestalt battery
(closure silhouettes, mark colour, series count), the chart-category task
(``similarity.chart.category_mean``) and SalBench detection, plus the VSI pin run's records
(``/work/pin/vsi`` or ``--vsi RUN``: clean answers with their top-k distributions and blurred
conditions) copied under each model's name (VSI model ``v`` of the run as ``<model>-v``).  Eight distinct synthetic models are drawn; further
models are copies of them under new names (``m00008`` ...; trial ids renamed to match), so a file
of any size costs one string replacement per line.  Needs the human-data mirror
(``PERCEPTBENCH_MIRROR``); imports no torch.

    python benchmarks/mixed_records.py OUT.jsonl N [--vsi RUN_DIR]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TASKS = ("closure.nat.silhouette", "similarity.chart.mark_color", "similarity.chart.series_count",
         "similarity.chart.category_mean", "salbench.detection.syn@n=60,n_probe=0")
DISTINCT = 8


def write_mixed(out: Path, n_target: int, vsi_run: Path | None = Path("/work/pin/vsi")) -> dict:
    """Write about ``n_target`` mixed records to ``out``; returns {"records": n, "models": m}."""
    from perceptbench.testing.synthetic_runs import synthetic_records

    names = [f"m{i:05d}" for i in range(DISTINCT)]
    recs = synthetic_records(names, tasks=TASKS)
    human = [r.to_json_line() for r in recs if r.model_family == "human"]
    per_model: dict[str, list[str]] = {m: [] for m in names}
    for r in recs:
        if r.model_family != "human":
            per_model[r.model].append(r.to_json_line())
    if vsi_run is not None:
        vsi = (Path(vsi_run) / "records.jsonl").read_text().splitlines()
        for m in names:  # each VSI model v of the run becomes model "<m>-v"
            for ln in vsi:
                v = json.loads(ln)["model"]
                per_model[m].append(ln.replace(f'|{v}|rep', f'|{m}-{v}|rep')
                                    .replace(f'"model":"{v}"', f'"model":"{m}-{v}"'))
    size = len(per_model[names[0]])
    n_models = max(1, round((n_target - len(human)) / size))
    n = 0
    with open(out, "w") as f:
        for ln in human:
            f.write(ln + "\n")
        n += len(human)
        for k in range(n_models):
            src = names[k % DISTINCT]
            new = f"m{k:05d}"
            for ln in per_model[src]:
                if new != src:
                    # names are of one width, so one is never a prefix of another
                    ln = ln.replace(f'|{src}', f'|{new}').replace(f'"model":"{src}', f'"model":"{new}')
                f.write(ln + "\n")
            n += len(per_model[src])
    return {"records": n, "models": n_models}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("n", type=int)
    ap.add_argument("--vsi", type=Path, default=Path("/work/pin/vsi"))
    a = ap.parse_args()
    print(json.dumps(write_mixed(a.out, a.n, a.vsi)))


if __name__ == "__main__":
    main()
