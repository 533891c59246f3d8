"""vsi/samples.py: the VSI samples of many records computed on arrays equal the per-pair
definition (one ``kl_topk`` and one set of guards per record pair) value for value (issue 25)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptbench.tasks import get_task
from perceptbench.vsi.samples import (FLAG_REASONS, PERTURBATIONS, distribution_flags, dist_keys, trial_skipped,
                                      vsi_flagged, vsi_of_records, vsi_samples)

from helpers.records import plant_vsi_record


def _reference(records):
    """(task, model, sample, perturbation) -> VSI (nats, argmax changed, correct) or the flag reason,
    pair by pair as the module docstring defines them."""
    clean = {(r.task_id, r.model, r.run_meta.model_extra["vsi"]["sample_id"]): r for r in records
             if r.run_meta.model_extra["vsi"]["condition"] == "clean"}
    out = {}
    for r in records:
        m = r.run_meta.model_extra["vsi"]
        cr = clean.get((r.task_id, r.model, m["sample_id"]))
        if m["condition"] == "clean" or cr is None:
            continue
        cm = cr.run_meta.model_extra["vsi"]
        key = (r.task_id, r.model, m["sample_id"], PERTURBATIONS[m["condition"]])
        if trial_skipped(cr) or trial_skipped(r):
            out[key] = "skipped_trial"
            continue
        found = set(distribution_flags(cm)) | set(distribution_flags(m))
        reason = next((x for x in FLAG_REASONS[1:4] if x in found), None)
        if reason is None and not (cm["image_sha256"] is not None and cm["image_sha256"] == m["image_sha256"]):
            ck, pk = dist_keys(cm), dist_keys(m)
            if len(ck) >= 2 and ck == pk and [float(x) for x in cm["logprobs"]] == [float(x) for x in m["logprobs"]]:
                reason = "identical_across_conditions"
        out[key] = reason or vsi_of_records(cm, m) + (cr.correct,)
    return out


def _random_records(seed, n_samples=60, models=("a", "b", "c"), strings=False):
    """Records of every condition with distributions of lengths 1-50 over a small vocabulary (so
    the top-k sets overlap, coincide or miss), some complete, and every guard planted somewhere."""
    task = get_task("vsi.salbench.syn@n=4")
    rng = np.random.default_rng(seed)
    recs = []
    for model in models:
        for i in range(n_samples):
            sid = f"s{i:03d}"
            base = None
            for cond in ("clean", "region_blur", "whole_blur"):
                k = int(rng.choice([1, 2, 3, 5, 20, 50]))
                ids = rng.choice(60, size=k, replace=False).tolist()
                p = np.sort(rng.dirichlet(np.full(k, 0.5)))[::-1] * rng.choice([1.0, rng.uniform(0.2, 1.0)])
                lps = np.log(np.maximum(p, 1e-200)).tolist()
                sha, extra = f"{sid}{cond}", {}
                kind = rng.integers(0, 40)  # 0-10: a guard or a special case
                if cond == "clean":
                    base = (ids, lps)
                elif kind == 0:  # identical lists on another image: flagged
                    ids, lps = base
                elif kind == 1:  # identical lists on the same image: a VSI of 0
                    ids, lps = base
                    sha = f"{sid}clean"
                if kind == 2:
                    lps = [0.5] + lps[1:]  # a positive log-probability
                elif kind == 3 and k > 1:
                    ids = [ids[0]] + ids[:-1]  # a duplicate key
                elif kind == 4 and k > 1:
                    lps = [lps[0]] * k  # no ranking
                elif kind == 5:
                    ids, lps = [ids[0]], [0.0]  # one-hot
                elif kind == 6:
                    extra = {"skipped": "invalid", "skip_scope": "trial"}
                elif kind == 7 and k > 1:
                    lps = lps[:-1] + [None]  # null as JSON stores NaN
                elif kind == 8 and k > 1:
                    lps = lps[:-1]  # fewer log-probabilities than keys
                tokens = [" " if kind == 9 and j == 0 else f"t{x}" for j, x in enumerate(ids)]
                r = plant_vsi_record(task, cond, sid, None if strings else ids, lps, model=model, image_sha256=sha,
                                     tokens=tokens, response="B" if rng.random() < 0.7 else "C", **extra)
                r.run_meta.model_extra["vsi"]["complete"] = bool(kind == 10)
                recs.append(r)
    return recs


@pytest.mark.parametrize("seed, strings", [(0, False), (1, False), (2, True)])
def test_samples_on_arrays_equal_the_per_pair_definition(seed, strings):
    recs = _random_records(seed, strings=strings)
    want = _reference(recs)
    got = {(s.task_id, s.model, s.sample_id, s.perturbation): (s.vsi, s.argmax_changed, s.correct)
           for s in vsi_samples(recs)}
    got.update({(f.task_id, f.model, f.sample_id, f.perturbation): f.reason for f in vsi_flagged(recs)})
    assert got == want  # VSI bit for bit (floats compared with ==)
    reasons = {v for v in want.values() if isinstance(v, str)}
    assert reasons == set(FLAG_REASONS)  # every guard was exercised
    assert any(isinstance(v, tuple) and v[0] == 0.0 for v in want.values())  # same image, same lists
    assert sum(isinstance(v, tuple) for v in want.values()) > 150
    assert not any(isinstance(v, tuple) and math.isnan(v[0]) for v in got.values())
