"""vsi/suite.py: the suite analysis reuses the samples it found task by task only when that is
exact (issue 25: each record's distribution read once per score)."""

from __future__ import annotations

from unittest import mock

import numpy as np

from perceptbench.tasks import get_task
from perceptbench.vsi import suite
from perceptbench.vsi.suite import VSISuiteAnalysis, vsi_analysis_rows

from helpers.records import plant_vsi_record


def _task_records(task_id, models=("m1", "m2"), n=6, seed=0):
    task = get_task(task_id)
    rng = np.random.default_rng(seed)
    recs = []
    for m in models:
        for i in range(n):
            p = rng.dirichlet(np.ones(3))
            q = rng.dirichlet(np.ones(3))
            recs += [plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], np.log(p).tolist(), model=m),
                     plant_vsi_record(task, "whole_blur", f"s{i}", [1, 2, 3], np.log(q).tolist(), model=m,
                                      image_sha256="y")]
    return recs


def _rows(analysis, records):
    return analysis.rows(records, seed=0, features_dir=None, families=None, task_rows=[], models=None)


def test_rows_reuse_the_samples_of_each_task_and_equal_a_fresh_computation():
    a = _task_records("vsi.salbench.syn@n=4,perturbation=whole", seed=1)
    b = _task_records("vsi.salbench.syn@n=5,perturbation=whole", seed=2)
    analysis = VSISuiteAnalysis()
    assert analysis.takes_part(a) and analysis.takes_part(b)
    with mock.patch.object(suite, "blur_samples", side_effect=AssertionError("recomputed")):
        got = _rows(analysis, a + b)  # the kept lists, one after the other: no second pass
    assert got == vsi_analysis_rows(a + b, 0) and any(r.metric.startswith("vsi_rho[") for r in got)


def test_rows_recompute_when_the_records_are_not_the_kept_lists():
    a = _task_records("vsi.salbench.syn@n=4,perturbation=whole", seed=1)
    b = _task_records("vsi.salbench.syn@n=5,perturbation=whole", seed=2)
    half = len(a) // 2  # one task split in two lists: its pairs cross them
    analysis = VSISuiteAnalysis()
    assert analysis.takes_part(a[:half]) and analysis.takes_part(a[half:])
    assert _rows(analysis, a) == vsi_analysis_rows(a, 0)
    other = VSISuiteAnalysis()
    assert other.takes_part(a)
    assert _rows(other, a + b) == vsi_analysis_rows(a + b, 0)  # more records than were kept
    assert _rows(other, b) == vsi_analysis_rows(b, 0)
