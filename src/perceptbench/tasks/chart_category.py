"""``similarity.chart.category_mean``: which category of a colour-coded scatterplot has the
highest mean y, on the plots, palettes and per-trial human data of Tseng et al. (CHI 2023).

No public benchmark scores error consistency on chart stimuli; here every released human
trial is a record (``human:<participant>``), scored by the same code as the models.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..record_table import TaskColumns
from ..records import TrialRecord
from ..scorers.cell_panel import CellPanelScorer
from ..seeding import rng_for, text_hash
from ..core.rows import ScoreRow
from ..core.settings import Setting
from .base import Stimulus, Task, make_record

WRONG = "other"
"""Response of a human trial released as incorrect: the release gives correctness only,
not the category chosen, so the response is "a category other than the answer"."""

K_LEVELS = tuple(range(2, 11))
"""Category counts in the study (2..10)."""


def stimulus_id_for(batch: str, index: int, palette: str) -> str:
    """``tseng_<batch>_<index:02d>_<palette>``: one plot in one palette."""
    return f"tseng_{batch}_{index:02d}_{palette}"


def parse_stimulus_id(sid: str) -> tuple[str, int, str]:
    """Inverse of :func:`stimulus_id_for` -> (batch, index, palette); ValueError otherwise."""
    parts = sid.split("_")
    if len(parts) != 4 or parts[0] != "tseng" or not parts[2].isdigit():
        raise ValueError(f"not a category_mean stimulus id: {sid!r}")
    return parts[1], int(parts[2]), parts[3]


class CategoryMeanTask(Task):
    """``similarity.chart.category_mean`` (Tseng, Quadri, Wang & Szafir, CHI 2023).

    Stimulus: one released plot (10 batches x 45, 2-10 categories) rendered in one of the
    10 palettes as the study page drew it, with the row of category swatches numbered
    1..k (see :mod:`perceptbench.stimuli.tseng_scatterplots`).  Question: the study's
    "Which category has the highest average based on the y-values?".  Ground truth: the
    released ``ans`` + 1.  ``manipulated_value``: the number of categories k.

    Split (seeded, ``rng_for(seed, base_id, "probe-batches")``): ``probe_batches`` of the
    10 batches (default 3) are probe-train: their 42 non-shared plots in all 10 palettes.
    Test: every (plot, palette) that a participant saw in the other batches.  Plots and
    participants never cross the split.  ``n_test``/``n_probe``: a seeded subsample
    (``all`` = everything).

    Human reference: the 3,822 released trials, one record each (``human:<participant>``,
    response = the answer when correct, else ``"other"``).  Encoder readout: a single-label
    logistic probe (``class_probe``) fit on probe-train.
    """

    base_id = "similarity.chart.category_mean"
    title = "Highest-mean category in scatterplots"
    principle = "similarity"
    track = "chart"
    response_space = "choice"
    encoder_readout = "class_probe"
    description = ("highest-mean category in colour-coded scatterplots (2-10 categories, 10 palettes) "
                   "vs 3,822 human trials of Tseng et al. 2023")
    prompt_text = ("Which category has the highest average based on the y-values? The categories are the "
                   "colored circles numbered 1 to {k} under the plot. Answer with the number of the category.")
    human_ref_id = "tseng2023.category_mean.trials"
    human_data = "yes: 3,822 per-trial answers of Tseng et al. (2023)'s participants to the same scatterplots"
    defaults = {"probe_batches": "3", "n_test": "all", "n_probe": "all", "renderer": "2"}
    settings = {"probe_batches": Setting("int", 1, 9), "n_test": Setting("int", 1, choices=("all",)),
                "n_probe": Setting("int", 1, choices=("all",)), "renderer": Setting("int", 1, 2)}
    """``probe_batches``: 1..9 of the 10 released batches, so both splits keep a batch;
    ``n_test``/``n_probe``: a subsample size, or ``all``; ``renderer``: the version of the
    plots' pixels (:data:`perceptbench.stimuli.tseng_scatterplots.RENDERER_VERSION`; 1 = the
    earlier Lanczos downsampling).  Every record carries it in ``run_meta.task_params``, so a
    run written with other pixels (records without it were written by version 1) is not
    resumed with these: the resume check names the changed task settings."""

    def options(self) -> tuple:
        return tuple(range(1, 11))

    # ------------------------------------------------------------------ stimuli

    def probe_batches(self, seed: int) -> tuple[str, ...]:
        from ..stimuli import tseng_scatterplots as ts

        b = ts.batches()
        pick = rng_for(seed, self.base_id, "probe-batches").permutation(len(b))[: int(self.params["probe_batches"])]
        return tuple(sorted(b[i] for i in pick))

    def stimuli(self, seed: int) -> list[Stimulus]:
        from ..stimuli import tseng_scatterplots as ts

        plots = ts.load_plots()
        pals = ts.palettes()
        shared = ts.shared_plots()
        probe_b = set(self.probe_batches(seed))
        cells = sorted({(t.batch, t.palette) for t in ts.human_trials()})
        keys: list[tuple[str, int, str, str]] = []
        for b, pal in cells:
            if b in probe_b:
                continue
            keys += [(b, i, pal, "test") for (bb, i) in sorted(plots) if bb == b and (bb, i) not in shared]
        probe = [(b, i, pal, "probe_train") for (b, i) in sorted(plots) if b in probe_b and (b, i) not in shared
                 for pal in sorted(pals)]
        keys = self._subsample(keys, "n_test", seed) + self._subsample(probe, "n_probe", seed)
        out = []
        for b, i, pal, split in keys:
            p = plots[(b, i)]
            out.append(Stimulus(
                stimulus_id_for(b, i, pal), split,
                render=(lambda p=p, c=pals[pal], v=int(self.params["renderer"]): ts.render_plot(p, c, version=v)),
                ground_truth=p.answer + 1, manipulated_value=p.category_num,
                meta={"batch": b, "plot_index": i, "palette": pal, "points_per_category": p.point_num,
                      "delta": p.delta, "plot_sha256": p.sha256}))
        return out

    def _subsample(self, keys: list, name: str, seed: int) -> list:
        v = self.params[name]
        if v == "all" or int(v) >= len(keys):
            return keys
        pick = np.sort(rng_for(seed, self.base_id, name).permutation(len(keys))[: int(v)])
        return [keys[j] for j in pick]

    def vlm_request(self, s: Stimulus, seed: int):
        k = int(s.manipulated_value)
        return (s.render(),), self.prompt_text.format(k=k), {}

    # ------------------------------------------------------------------ human records

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        from ..stimuli import tseng_scatterplots as ts

        plots = ts.load_plots()
        probe_b = set(self.probe_batches(seed))
        sha = ts.source_sha256("dataset/user response.csv")
        out = []
        for t in ts.human_trials():
            p = plots[(t.batch, t.index)]
            gt = p.answer + 1
            out.append(make_record(
                self, stimulus_id=stimulus_id_for(t.batch, t.index, t.palette), model=f"human:{t.participant}",
                model_family="human", readout="human_trial", response=gt if t.correct else WRONG,
                ground_truth=gt, manipulated_value=p.category_num, raw_output=t.raw,
                prompt_id="tseng2023.highest-mean-y", prompt_hash=text_hash(self.prompt_text),
                model_version=f"sha256:{sha}", seed=seed, run_id=run_id,
                split="probe_train" if t.batch in probe_b else "test", source_row=t.row,
                time_spent_s=t.time_spent_s, cell=f"{t.batch}/{t.palette}"))
        return out

    # ------------------------------------------------------------------ scoring

    @cached_property
    def scorer(self) -> CellPanelScorer:
        """This task's cell-panel scorer (k = 2..10)."""
        return CellPanelScorer(self.task_id, K_LEVELS)

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """Score rows (:meth:`CellPanelScorer.score`)."""
        return self.scorer.score(records, seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the records as columns (:meth:`CellPanelScorer.score_columns`)."""
        return self.scorer.score_columns(c, seed)
