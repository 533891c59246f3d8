"""VSI lives in one package, ``perceptbench.vsi``: its modules import in any order, the old
module paths are gone, and scoring reaches the cross-task VSI analyses only through the
suite-analysis registry.  (Its per-module import layers: tests/project/test_import_layers.py.)"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VSI_MODULES = ("samples", "cells", "scoring", "protocol", "benchmarks", "features", "respondent", "analysis",
               "probe", "suite")


@pytest.mark.parametrize("module", VSI_MODULES)
def test_each_vsi_module_imports_first_in_a_fresh_interpreter_without_torch(module):
    # importing any module runs perceptbench/tasks/__init__ or respond/__init__ on the way; a
    # module that met itself half-built there would raise ImportError here
    code = f"import sys, perceptbench.vsi.{module}; assert 'torch' not in sys.modules, 'torch imported'"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr[-2000:]


def test_the_old_vsi_module_paths_are_gone():
    for old in ("perceptbench.tasks.vsi", "perceptbench.vsi_runner", "perceptbench.vsi_features",
                "perceptbench.respond.vsi", "perceptbench.metrics.vsi", "perceptbench.metrics.vsi_analysis",
                "perceptbench.metrics.vsi_cells", "perceptbench.metrics.vsi_probe"):
        assert importlib.util.find_spec(old) is None, old


def test_public_vsi_names_are_importable_from_their_new_home():
    from perceptbench.respond import RESPONDENTS
    from perceptbench.tasks.registry import TASKS
    from perceptbench.vsi.benchmarks import VSI_TASKS, VSIMMStar, VSIPope
    from perceptbench.vsi.features import ProbeFeatures, cache_probe_features, store_key  # noqa: F401
    from perceptbench.vsi.protocol import CONFIDENCE_PROMPT, VSITask, battery_vsi  # noqa: F401
    from perceptbench.vsi.respondent import VSIRespondent, run_vsi_task  # noqa: F401
    from perceptbench.vsi.samples import VSISample, vsi_samples  # noqa: F401

    assert RESPONDENTS.get("vlm_vsi") is VSIRespondent
    assert all(TASKS[t.base_id] is t for t in VSI_TASKS) and {VSIPope, VSIMMStar} <= set(VSI_TASKS)
    assert all(issubclass(t, VSITask) for t in VSI_TASKS)


def test_scoring_runs_each_registered_suite_analysis_on_the_tasks_that_take_part(monkeypatch):
    from perceptbench.analyses import SUITE_ANALYSES, SuiteAnalysis
    from perceptbench.core.rows import ScoreRow
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import synthetic_records

    seen = {}

    class OnlyMarkColor(SuiteAnalysis):
        def takes_part(self, records):
            return records[0].task_id == "similarity.chart.mark_color"

        def rows(self, records, *, seed, features_dir, families, task_rows, models, pairs):
            seen.update(tasks={r.task_id for r in records}, seed=seed, families=families, pairs=pairs)
            return [ScoreRow("suite", "all", "n_records", float(len(records)))]

    monkeypatch.setitem(SUITE_ANALYSES._entries, "only_mark_color", OnlyMarkColor)
    recs = synthetic_records(["m"], tasks=("closure.nat.silhouette", "similarity.chart.mark_color"))
    rows = score_records(recs, seed=3, families={"m": "f"}, pairs="neighbours")
    assert seen == {"tasks": {"similarity.chart.mark_color"}, "seed": 3, "families": {"m": "f"}, "pairs": "neighbours"}
    assert rows[-1].metric == "n_records" and rows[-1].value == sum(
        r.task_id == "similarity.chart.mark_color" for r in recs)
    assert all(r.task_id != "suite" for r in rows[:-1])  # after every per-task row
