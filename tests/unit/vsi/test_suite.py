"""vsi/suite.py: scoring keeps each taking-part task's blur samples, found once, not its records,
and the rows over them equal a fresh computation over the records (issue 25)."""

from __future__ import annotations

from unittest import mock

import numpy as np

from perceptbench.tasks import get_task
from perceptbench.vsi import suite
from perceptbench.vsi.samples import VSISample
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


def test_rows_over_the_kept_samples_equal_a_fresh_computation_without_a_second_pass():
    a = _task_records("vsi.salbench.syn@n=4,perturbation=whole", seed=1)
    b = _task_records("vsi.salbench.syn@n=5,perturbation=whole", seed=2)
    analysis = VSISuiteAnalysis()
    kept = []
    for recs in (a, b):
        assert analysis.takes_part(recs)
        kept += analysis.keep(recs)
    assert kept and all(isinstance(s, VSISample) for s in kept)  # the samples, not the records
    with mock.patch.object(suite, "blur_samples", side_effect=AssertionError("recomputed")):
        got = _rows(analysis, kept)  # no second pass over any record
    assert got == vsi_analysis_rows(a + b, 0) and any(r.metric.startswith("vsi_rho[") for r in got)
    # the seed of the kept tasks' records when none is given
    assert analysis.rows(kept, seed=None, features_dir=None, families=None, task_rows=[], models=None) == \
        vsi_analysis_rows(a + b, None)


def test_rows_over_records_are_computed_from_them():
    a = _task_records("vsi.salbench.syn@n=4,perturbation=whole", seed=1)
    b = _task_records("vsi.salbench.syn@n=5,perturbation=whole", seed=2)
    other = VSISuiteAnalysis()
    assert other.takes_part(a)
    assert _rows(other, a + b) == vsi_analysis_rows(a + b, 0)  # more records than took part
    assert _rows(other, b) == vsi_analysis_rows(b, 0)
    assert not other.takes_part([r for r in a if r.stimulus_id.endswith("~clean")])  # no blur sample
