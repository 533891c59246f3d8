"""SalBench tasks end to end: default encoder (linear probe), a tiny local VLM (prompt
readout, few-shot, multi-image skip), an image-text encoder (zero-shot retrieval) on the
natural-split fixture."""

import json

import numpy as np
import pytest

pytest.importorskip("torch", reason="model extra not installed")

from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_file
from perceptbench.tasks import get_task
from helpers.paths import FIXTURES
import math
from perceptbench.core.rows import ScoreRow
from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from helpers.records import plant_record
from helpers.score_rows import SEED
from helpers.score_rows import assert_rows
from helpers.score_rows import boot_row
from helpers.cli import cli
from helpers.records import plant_answers

FIXTURE = FIXTURES / "salbench" / "local_annotations.json"


def rows_of(path):
    return {(r.model, r.metric): r for r in score_file(path)}


def test_default_encoder_detection_syn_cli(tmp_path):
    out = tmp_path / "run"
    p = cli("run", "--task", "salbench.detection.syn@n=30,n_probe=30", "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    assert len(recs) == 30
    assert {r.readout for r in recs} == {"linear_probe"} and {r.response_space for r in recs} == {"multilabel"}
    assert all(len(r.response) == 1 and r.response[0] in ("Orientation", "Color", "Size") for r in recs)
    assert {r.manipulated_value.split("/")[1] for r in recs} == {"easy", "medium", "hard"}
    rows = rows_of(out / "records.jsonl")
    for metric in ("exact_match", "mean_f1", "f1[Color]", "exact_match@nulls_excluded", "mean_f1@defined_categories",
                   "exact_match[difficulty=hard]", "exact_match[feature_difficulty=size/easy]"):
        assert ("efficientnet-lite0", metric) in rows
    em = rows[("efficientnet-lite0", "exact_match")]
    assert em.value == pytest.approx(np.mean([r.correct for r in recs]))
    assert em.ci_low <= em.value <= em.ci_high


def test_prompts_and_visual_box():
    t = get_task("salbench.referring.syn@n=3,n_probe=3")
    s = [x for x in t.stimuli(0) if x.split == "test"][0]
    imgs, prompt, _ = t.vlm_request(s, 0)
    assert f"a scene with 48 {s.meta['object_category']}" in prompt
    assert s.meta["bbox_text"] in prompt and "Orientation, Color, Focus, Shape, Size, Location, Pattern" in prompt
    v = get_task("salbench.visual_referring.syn@n=3,n_probe=3")
    sv = [x for x in v.stimuli(0) if x.split == "test"][0]
    img = np.asarray(sv.render())
    x0, y0, x1, y1 = sv.meta["bbox"]
    red = (img[..., 0] > 200) & (img[..., 1] < 60) & (img[..., 2] < 60)
    assert red[max(0, y0 - 6):y1 + 7, max(0, x0 - 6):x1 + 7].sum() > 4 * (x1 - x0)
    assert not (np.asarray(s.render())[..., 0] > 200).all()
    d = get_task("salbench.detection.syn@n=3,n_probe=6,shots=3")
    sd = [x for x in d.stimuli(0) if x.split == "test"][0]
    imgs, prompt, extra = d.vlm_request(sd, 0)
    assert len(imgs) == 4 and prompt.count("Answer: ") == 3 and "Question (image 4)" in prompt
    assert len(extra["fewshot_stimulus_ids"]) == 3 and all(i.startswith("probe-") for i in extra["fewshot_stimulus_ids"])


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory):
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    return build_tiny_vlm("qwen2_vl", tmp_path_factory.mktemp("vlm") / "tiny-qwen")


def test_tiny_vlm_detection_and_fewshot(tiny_vlm_dir, tmp_path, monkeypatch):
    from perceptbench.models.registry import load_model

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    vlm = load_model(f"hf:{tiny_vlm_dir}")
    tasks = ["salbench.detection.syn@n=3,n_probe=6", "salbench.detection.syn@n=3,n_probe=6,shots=3"]
    run(RunConfig(out=tmp_path / "run", tasks=tasks, models=[f"hf:{tiny_vlm_dir}"], batch_size=4), progress=False,
        load_model=lambda _a: vlm)
    recs = read_records(tmp_path / "run" / "records.jsonl")
    assert len(recs) == 6 and {r.readout for r in recs} == {"vlm_prompt"}
    few = [r for r in recs if "shots=3" in r.task_id]
    assert vlm.supports_multi_image
    assert all(len(r.run_meta.model_extra["image_sha256s"]) == 4 for r in few)
    assert len({r.prompt_hash for r in recs}) >= 2
    rows = rows_of(tmp_path / "run" / "records.jsonl")
    assert ("tiny-qwen", "null_rate") in rows

    class SingleImage:
        def __init__(self, v):
            self.v = v
            for a in ("name", "model_version", "family", "generation_settings"):
                setattr(self, a, getattr(v, a))
            self.supports_multi_image = False

        def generate(self, requests, batch_size=8):
            raise AssertionError("must not be called for a skipped few-shot task")

    run(RunConfig(out=tmp_path / "run2", tasks=tasks[1:], models=["single=hf:x"], batch_size=4), progress=False,
        load_model=lambda _a: SingleImage(vlm))
    rows = rows_of(tmp_path / "run2" / "records.jsonl")
    sk = rows[("tiny-qwen", "skipped")]
    assert "does not accept several images" in sk.note


def test_text_encoder_retrieval_on_natural_fixture(tmp_path):
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "clip")
    task = f"salbench.detection.nat@source={FIXTURE}"
    run(RunConfig(out=tmp_path / "run", tasks=[task], models=[f"clip=hf:{d}"]), progress=False)
    recs = read_records(tmp_path / "run" / "records.jsonl")
    assert len(recs) == 1 and recs[0].readout == "zero_shot_retrieval"
    assert set(json.loads(recs[0].raw_output)["cosine"]) == {"Orientation", "Color", "Focus", "Shape", "Size",
                                                             "Location", "Pattern"}
    assert recs[0].manipulated_value == 11  # distractors counted from the O3 mask
    rows = rows_of(tmp_path / "run" / "records.jsonl")
    assert rows[("clip", "retrieval_chance_top1")].value == pytest.approx(1 / 7)
    assert rows[("clip", "retrieval_chance_top3")].value == pytest.approx(3 / 7)
    assert ("clip", "exact_match[distractors=7-15]") in rows or any(k[1].startswith("exact_match[distractors=")
                                                                    for k in rows)


def test_fewshot_examples_vary_per_trial_and_balance_labels():
    d = get_task("salbench.detection.syn@n=30,n_probe=30,shots=3")
    test = [x for x in d.stimuli(0) if x.split == "test"]
    sets = [tuple(e.stimulus_id for e in d.fewshot_examples(0, s.stimulus_id)) for s in test]
    assert len(set(sets)) > 1
    lasts = {d.fewshot_examples(0, s.stimulus_id)[-1].ground_truth[0] for s in test}
    assert len(lasts) > 1  # no label is always shown last
    for s in test[:5]:
        labels = sorted(e.ground_truth[0] for e in d.fewshot_examples(0, s.stimulus_id))
        assert labels == ["Color", "Orientation", "Size"]
    assert sets == [tuple(e.stimulus_id for e in d.fewshot_examples(0, s.stimulus_id)) for s in test]


def test_natural_split_scores_every_item_by_default_and_probe_needs_opt_in():
    t = get_task(f"salbench.detection.nat@source={FIXTURE}")
    assert all(s.split == "test" for s in t.stimuli(0))
    with pytest.raises(ValueError, match="probe_fraction"):
        get_task(f"salbench.detection.nat@source={FIXTURE},probe_fraction=2").stimuli(0)
    # settings are validated when the task is made (issue 7 item 7), naming setting, value and range
    with pytest.raises(ValueError, match=r"setting n='abc' is invalid; allowed: an integer in \[3, 1000000\]"):
        get_task("salbench.detection.syn@n=abc")


def test_referring_prompt_refuses_missing_box(tmp_path):
    ann = tmp_path / "a.json"
    ann.write_text(json.dumps([{"image_id": "x", "split": "nat", "answer": "Color", "n_distractors": 4,
                                "object_category": "cups",
                                "image": "${PERCEPTBENCH_MIRROR}/kotseruba-p3o3/examples/images/C4kfsNTXa2Irj.jpg"}]))
    t = get_task(f"salbench.referring.nat@source={ann}")
    s = t.stimuli(0)[0]
    with pytest.raises(ValueError, match="bbox_text"):
        t.vlm_request(s, 0)


def test_synthetic_stimuli_are_generated_lazily(monkeypatch):
    """Listing a synthetic task's stimuli renders nothing; metadata and images come on first use,
    and only the metadata is kept (before: every array was rendered up front and kept)."""
    from perceptbench.stimuli import search_arrays as sa
    from perceptbench.tasks import get_task

    calls = []
    real = sa.make_search_stimulus
    monkeypatch.setattr(sa, "make_search_stimulus", lambda *a, **k: calls.append(a) or real(*a, **k))
    task = get_task("salbench.visual_referring.syn@n=30,n_probe=6")
    stimuli = task.stimuli(0)
    assert len(stimuli) == 36 and calls == []
    s = [x for x in stimuli if x.split == "test"][0]
    img = s.render()
    assert len(calls) == 1 and img.size == (512, 512)
    assert s.meta["n_distractors"] == 48 and len(calls) == 1  # filled by render, no second rendering
    ref = real(*calls[0])
    assert s.meta["bbox"] == list(ref.target_bbox) and s.meta["object_category"] == ref.object_category
    other = [x for x in stimuli if x.split == "test"][1]
    assert other.meta["feature"] and len(calls) == 2 - 1  # plan fields need no rendering
    assert "bbox_text" in dict(other.meta) and len(calls) == 2


def _sal_rec(task, model, sid, pred, truth, mv, readout="vlm_prompt", raw=None, **meta):
    return plant_record(task, stimulus_id=sid, model=model, model_family="vlm", readout=readout,
                        response=None if pred is None else sorted(pred), ground_truth=sorted(truth),
                        manipulated_value=mv, raw_output=raw, prompt_id="p", prompt_hash="h", model_version="v",
                        seed=0, run_id="r", **meta)


def _sal_model_rows(tid, m, preds, truths, cats, groups, floor):
    """The rows SalBench writes for one model, from the saliency metric's own scores;
    ``floor``: (majority-answer exact-match floor, that answer), computed by hand by the caller."""
    from perceptbench.metrics.saliency import score_by_group, score_multilabel

    n_null = sum(p is None for p in preds)
    rows = []
    both = {"": score_multilabel(preds, truths, cats, null="empty", n_boot=N_BOOT_B, seed=SEED),
            "@nulls_excluded": score_multilabel(preds, truths, cats, null="exclude", n_boot=N_BOOT_B, seed=SEED)}
    for suffix, sc in both.items():
        rows.append(boot_row(tid, m, "exact_match" + suffix, sc.ci["exact_match"], sc.n, n_null, "; ".join(sc.notes)))
        rows.append(boot_row(tid, m, "mean_f1" + suffix, sc.ci["mean_f1"], sc.n, n_null,
                              f"mean over all {len(cats)} categories, an undefined F1 counted as 0 (seed 001 §4)"))
        for c in cats:
            note = ("undefined: category neither true nor predicted; counted as 0 in mean_f1"
                    if np.isnan(sc.category_f1[c]) else "")
            rows.append(boot_row(tid, m, f"f1[{c}]" + suffix, sc.ci[f"f1:{c}"], sc.n, n_null, note))
    rows.append(boot_row(tid, m, "mean_f1@defined_categories", both[""].ci["mean_f1_defined"], both[""].n, n_null,
                          "mean over the categories whose F1 is defined only (the project's headline before "
                          "issue 7); nulls as empty predictions"))
    rows.append(ScoreRow(tid, m, "null_rate", n_null / len(preds), None, None, len(preds), n_null))
    value, answer = floor
    rows.append(ScoreRow(tid, m, "exact_match_floor", value, None, None, len(truths), 0,
                         f"majority-answer floor: a constant answer {answer} matches exactly "
                         f"{value:.3f} of these {len(truths)} stimuli"))
    for gname, g in groups.items():
        for key, sc in score_by_group(preds, truths, g, cats, null="empty", n_boot=N_BOOT_B, seed=SEED).items():
            rows.append(boot_row(tid, m, f"exact_match[{gname}={key}]", sc.ci["exact_match"], sc.n, sc.n_null))
    return rows


def test_salbench_syn_score_rows_by_hand():
    task = get_task("salbench.detection.syn@n=3")
    tid = task.task_id
    # s0 Color right; s1 Size answered nothing parseable (null); s2 Orientation answered Color + Orientation
    data = [("s2", ["Color", "Orientation"], ["Orientation"], "orientation/easy"),
            ("s0", ["Color"], ["Color"], "color/easy"), ("s1", None, ["Size"], "size/hard")]
    recs = [_sal_rec(task, "vlm", s, p, t, mv) for s, p, t, mv in data]
    recs += [_sal_rec(task, "sk", "s0", None, ["Color"], "color/easy", skipped="no multi-image support"),
             _sal_rec(task, "sk", "s1", None, ["Size"], "size/hard", skipped="a second reason")]
    preds = [["Color"], None, ["Color", "Orientation"]]  # by stimulus id s0 s1 s2
    truths = [["Color"], ["Size"], ["Orientation"]]
    groups = {"difficulty": ["easy", "hard", "easy"], "feature": ["color", "size", "orientation"],
              "feature_difficulty": ["color/easy", "size/hard", "orientation/easy"]}
    want = [ScoreRow(tid, "sk", "skipped", float("nan"), None, None, 2, 2, "a second reason; no multi-image support")]
    # floor: truth sets {Color}, {Size}, {Orientation} once each; the tie goes to the first sorted, ['Color']: 1/3
    want += _sal_model_rows(tid, "vlm", preds, truths, task.categories, groups, (1 / 3, ["Color"]))
    rows = task.score(recs, SEED)
    assert_rows(rows, want)
    by = {r.metric: r for r in rows}
    # exact match: all 3 count (null = empty): 1/3; nulls excluded: s0 right, s2 wrong: 1/2
    assert by["exact_match"].value == pytest.approx(1 / 3) and by["exact_match@nulls_excluded"].value == 0.5
    assert by["exact_match[difficulty=easy]"].value == 0.5 and by["exact_match[difficulty=hard]"].value == 0.0
    assert by["null_rate"].value == pytest.approx(1 / 3) and by["null_rate"].n_null == 1


def test_salbench_nat_retrieval_rows_by_hand():
    from perceptbench.metrics.retrieval import analytic_chance, truth_matrix
    from perceptbench.tasks.salbench import SEVEN

    task = get_task("salbench.detection.nat")
    tid = task.task_id
    # cosines over the seven categories; truth sets; distractor counts (bins <7, 7-15, <7)
    cos = {"a": dict(zip(SEVEN, [0.1, 0.9, 0.2, 0.3, 0.0, 0.0, 0.0])),   # ranked Color, Shape, Focus
           "b": dict(zip(SEVEN, [0.5, 0.1, 0.2, 0.6, 0.4, 0.3, 0.0])),   # ranked Shape, Orientation, Size
           "c": dict(zip(SEVEN, [0.0] * 7))}   # all tied: stable order Orientation, Color, Focus
    truth = {"a": ["Color"], "b": ["Focus", "Size"], "c": ["Pattern"]}
    nd = {"a": 3, "b": 10, "c": 6}
    recs = [_sal_rec(task, "clip", s, [max(cos[s], key=cos[s].get)], truth[s], nd[s], readout="zero_shot_retrieval",
                     raw=json.dumps({"cosine": cos[s]})) for s in ("c", "b", "a")]
    ids = ["a", "b", "c"]
    preds = [[max(cos[s], key=cos[s].get)] for s in ids]
    truths = [truth[s] for s in ids]
    # floor: truth sets {Color}, {Focus, Size}, {Pattern} once each; the tie goes to the first sorted, ['Color']: 1/3
    want = _sal_model_rows(tid, "clip", preds, truths, task.categories, {"distractors": ["<7", "7-15", "<7"]},
                           (1 / 3, ["Color"]))
    t = truth_matrix(truths, SEVEN)
    # top-1: a Color hit, b Shape miss, c Orientation miss -> 1/3; top-3: a hit, b Size (3rd) hit, c miss -> 2/3
    for k, hits in ((1, [1.0, 0.0, 0.0]), (3, [1.0, 1.0, 0.0])):
        h = np.array(hits)
        want.append(boot_row(tid, "clip", f"retrieval_top{k}", bootstrap(lambda i: h[i].mean(1), 3,
                                                                          n_draws=N_BOOT_B, seed=SEED), 3, 0,
                              "hit if any of the top-k categories is in the truth set"))
        want.append(ScoreRow(tid, "clip", f"retrieval_chance_top{k}", analytic_chance(t, k), None, None, 3, 0,
                             "uniformly random ranking of the 7 categories, for this label distribution"))
    # chance top-1 = mean(1/7, 2/7, 1/7) = 4/21
    assert analytic_chance(t, 1) == pytest.approx(4 / 21)
    assert_rows(task.score(recs, SEED), want)


def test_salbench_retrieval_breaks_cosine_ties_in_category_order():
    """Tied cosines rank in the order of SEVEN (a stable sort): numpy's default argsort
    need not keep it (its SIMD sorting networks reorder ties, as on AVX-512 machines)."""
    from perceptbench.tasks.salbench import SEVEN

    task = get_task("salbench.detection.nat")
    # d: Location and Pattern tie at the top -> Location first (top-1 hit on Location)
    # e: Orientation, Focus, Size, Pattern tie at 0.2 -> top-3 Orientation, Focus, Size (hit on Size; top-1 miss)
    cos = {"d": [0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5], "e": [0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2]}
    truth = {"d": ["Location"], "e": ["Size"]}
    recs = [_sal_rec(task, "clip", s, truth[s], truth[s], 3, readout="zero_shot_retrieval",
                     raw=json.dumps({"cosine": dict(zip(SEVEN, cos[s]))})) for s in ("d", "e")]
    by = {r.metric: r.value for r in task.score(recs, SEED)}
    assert (by["retrieval_top1"], by["retrieval_top3"]) == (0.5, 1.0)


def test_distractor_group_bins_and_unknown():
    from perceptbench.tasks.salbench import distractor_group

    assert [distractor_group(n) for n in (None, 0, 6, 7, 15)] == ["unknown", "<7", "<7", "7-15", "7-15"]


def test_salbench_scores_a_model_with_one_trial():
    task = get_task("salbench.detection.syn@n=3")
    rows = {r.metric: r.value for r in task.score([_sal_rec(task, "vlm", "s0", ["Color"], ["Color"], "color/easy")],
                                                  SEED)}
    assert rows["exact_match"] == 1.0 and rows["exact_match[feature=color]"] == 1.0 and rows["null_rate"] == 0.0


def test_salbench_encoder_records_of_settings_that_do_not_reach_an_encoder_score_as_skipped():
    """Encoder answers written before such settings were skipped at run time (no
    ``run_meta.skipped``) get the skipped row with the task's reason; a VLM's do not, and a
    single encoder record is enough (the reason comes from that record's readout)."""
    shots = get_task("salbench.detection.syn@n=3,shots=3")
    why = shots.encoder_not_applicable("linear_probe")
    assert why and "shots=3 does not apply" in why
    enc = [_sal_rec(shots, "probe", "s0", ["Color"], ["Color"], "color/easy", readout="linear_probe")]
    rows = shots.score(enc, SEED)
    assert [(r.model, r.metric, r.n, r.n_null, r.note) for r in rows] == [("probe", "skipped", 1, 1, why)]
    assert math.isnan(rows[0].value)
    vlm = [_sal_rec(shots, "vlm", "s0", ["Color"], ["Color"], "color/easy")]  # a VLM reads the examples: scored
    assert "exact_match" in {r.metric for r in shots.score(vlm, SEED)}
    det = get_task("salbench.detection.syn@n=3")  # shots=0 detection applies to an encoder: scored
    assert det.encoder_not_applicable("linear_probe") is None
    assert "exact_match" in {r.metric for r in det.score(
        [_sal_rec(det, "probe", "s0", ["Color"], ["Color"], "color/easy", readout="linear_probe")], SEED)}
    ref = get_task("salbench.referring.syn@n=3")
    rows = ref.score([_sal_rec(ref, "clip", "s0", ["Color"], ["Color"], "color/easy",
                               readout="zero_shot_retrieval")], SEED)
    assert [r.metric for r in rows] == ["skipped"] and "never reaches an encoder" in rows[0].note


class PixelStatsEncoder:
    """An image encoder without torch: per-channel mean and std of the pixels (6 features);
    counts the images it embeds."""
    name = "pixstats"
    model_version = "pixstats:v1"
    family = "encoder"

    def __init__(self):
        self.n_embedded = 0

    def embed(self, images, batch_size=8):
        import numpy as np

        self.n_embedded += len(images)
        a = [np.asarray(im.convert("RGB"), np.float32) / 255.0 for im in images]
        return np.stack([np.concatenate([x.mean((0, 1)), x.std((0, 1))]) for x in a])


SAL = "n=6,n_probe=6"


@pytest.fixture(scope="module")
def encoder_salbench_run(tmp_path_factory, mirror):
    from perceptbench.runner import RunConfig, run

    out = tmp_path_factory.mktemp("salenc") / "run"
    enc = PixelStatsEncoder()
    tasks = [f"salbench.detection.syn@{SAL}", f"salbench.detection.syn@{SAL},shots=3",
             f"salbench.referring.syn@{SAL}", f"salbench.visual_referring.syn@{SAL}",
             f"salbench.visual_referring.syn@{SAL},shots=3"]
    run(RunConfig(out=out, tasks=tasks, models=["pixstats=hf:unused"]), progress=False, load_model=lambda a: enc)
    return out, enc


def test_salbench_settings_that_do_not_reach_an_encoder_are_skipped(encoder_salbench_run):
    """Before: detection shots=3 and referring on an encoder probe were scored, with the very
    number of detection at shots=0 (the probe reads no prompt), and nothing said so."""
    from perceptbench.records import read_records
    from perceptbench.reports.headline import headline_rows
    from perceptbench.scoring import score_file

    out, enc = encoder_salbench_run
    # embedded: probe + test of detection and of visual referring at shots=0 only (2 x (6 + 6))
    assert enc.n_embedded == 24
    recs = [r for r in read_records(out / "records.jsonl") if r.model == "pixstats"]
    assert len(recs) == 30
    by_task = {}
    for r in recs:
        by_task.setdefault(r.task_id, []).append(r)
    for tid, rs in by_task.items():
        skipped = {r.run_meta.model_extra.get("skipped") for r in rs}
        if "shots=3" in tid or ".referring." in tid:
            assert all(r.response is None and r.raw_output is None for r in rs)
            (why,) = skipped
            assert ("shots=3 does not apply to an encoder" in why) if "shots=3" in tid else \
                ("referring prompt's box never reaches an encoder" in why)
        else:
            assert skipped == {None} and all(r.response is not None for r in rs)
    rows = {(r.task_id, r.metric): r for r in score_file(out / "records.jsonl") if r.model == "pixstats"}
    for tid in by_task:
        applies = "shots=3" not in tid and ".referring." not in tid
        assert ((tid, "exact_match") in rows) == applies and ((tid, "skipped") in rows) != applies
    heads = {h.task_id: h for h in headline_rows(score_file(out / "records.jsonl")) if h.model == "pixstats"
             and h.metric in ("exact_match", "skipped")}
    assert heads[f"salbench.referring.syn@{SAL}"].flags[0].startswith("skipped: the referring prompt's box")
    assert heads[f"salbench.detection.syn@{SAL},shots=3"].flags[0].startswith("skipped: shots=3 does not apply")


def test_progress_says_what_the_model_does_before_its_first_trial(tmp_path, mirror):
    """Before: the bar stood at 0/N (for ~17 s with the default encoder) while the model loaded
    and computed its probe features, with nothing on screen saying so."""
    import io

    from rich.console import Console

    from perceptbench.runner import RunConfig, run

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    enc = PixelStatsEncoder()
    run(RunConfig(out=tmp_path / "run", tasks=[f"salbench.detection.syn@{SAL}"], models=["pixstats=hf:unused"]),
        progress=True, console=console, load_model=lambda a: enc)
    text = buf.getvalue()
    assert "loading model pixstats=hf:unused ..." in text
    assert f"salbench.detection.syn@{SAL} | pixstats: computing probe features (6 probe-train stimuli) ..." in text
    assert "6/6" in text


def test_report_shows_skipped_encoder_settings_as_skipped_not_not_run(encoder_salbench_run, tmp_path):
    """The matrix said 'not run' for the skipped variants (the lookup wanted an exact_match row)."""
    import re

    from perceptbench.reports.data import load_report_data
    from perceptbench.reports.html import render_report

    out, _ = encoder_salbench_run
    html, md, _ = render_report(load_report_data([out]), "t")
    matrix = html[html.index('id="matrix"'):html.index('<h2 id="salbench"')]
    row = re.search(r"<tr><td>pixstats</td>(.*?)</tr>", matrix[matrix.index("<table"):]).group(1)
    assert "not run" not in row and row.count("skipped") >= 3
    assert "shots=3 does not apply to an encoder" in row  # the reason, on the cell's warning sign
    assert "| pixstats | skipped |" in md


def test_encoder_records_of_an_older_run_on_shots_are_scored_as_skipped(encoder_salbench_run):
    """A run written before this fix holds encoder answers for shots=3 / referring: scoring gives
    them the skipped row too, not the repeated detection number."""
    from perceptbench.records import TrialRecord, make_trial_id, read_records
    from perceptbench.scoring import score_records

    out, _ = encoder_salbench_run
    det = [r for r in read_records(out / "records.jsonl") if r.task_id == f"salbench.detection.syn@{SAL}"]
    old = []
    for tid in (f"salbench.detection.syn@{SAL},shots=3", f"salbench.referring.syn@{SAL}"):
        for r in det:
            d = r.model_dump()
            d.update(task_id=tid, trial_id=make_trial_id(tid, r.stimulus_id, r.model, r.rep))
            old.append(TrialRecord.model_validate(d))
    rows = {(r.task_id, r.metric): r for r in score_records(old)}
    assert "shots=3 does not apply" in rows[(f"salbench.detection.syn@{SAL},shots=3", "skipped")].note
    assert "never reaches an encoder" in rows[(f"salbench.referring.syn@{SAL}", "skipped")].note
    assert not any(metric == "exact_match" for _, metric in rows)


def test_salbench_exact_match_floor_is_the_majority_answer():
    from perceptbench.reports.headline import headline_rows
    from perceptbench.scoring import score_records
    from perceptbench.tasks.salbench import majority_answer_floor

    # truth sets: 3 x {Color}, 5 x {Orientation}, 2 x {Size, Color} -> a constant "Orientation" matches 5/10 = 0.5
    truths = [["Color"]] * 3 + [["Orientation"]] * 5 + [["Size", "Color"], ["Color", "Size"]]
    assert majority_answer_floor(truths) == (0.5, ["Orientation"])
    # a tie (2 x {Color}, 2 x {Size}) -> 2/4 = 0.5, the sorted-first answer
    assert majority_answer_floor([["Size"], ["Color"], ["Size"], ["Color"]]) == (0.5, ["Color"])
    assert majority_answer_floor([])[1] == []
    # a constant answerer on 8 planted stimuli (test stimuli 0,5,10 Color; 20,25,30,35 Orientation; 40 Size):
    # it answers "Orientation" everywhere -> exact match 4/8 = 0.5 = the floor, flagged "≤ floor"
    idx = [0, 5, 10, 20, 25, 30, 35, 40]
    recs = plant_answers("salbench.detection.syn@n=60,n_probe=0", "const", {i: ["Orientation"] for i in idx})
    floor = 0.5
    rows = {r.metric: r for r in score_records(recs) if r.model == "const"}
    assert rows["exact_match"].value == pytest.approx(floor) == rows["exact_match_floor"].value
    (h,) = [h for h in headline_rows(rows.values()) if h.metric == "exact_match"]
    assert h.floor == pytest.approx(floor) and "≤ floor" in h.flags


def test_synthetic_retrieval_ranks_seven_sentences_as_documented():
    """docs/salbench.md §6: all seven category sentences are ranked on synthetic images too, so
    chance on single-label stimuli is 1/7 (top-1) and 3/7 (top-3), not 1/3 and 1."""
    import json

    from perceptbench.scoring import score_records
    from perceptbench.tasks.salbench import SEVEN

    cos = {c: 0.1 * i for i, c in enumerate(SEVEN)}  # "Pattern" ranks first: never a synthetic truth
    recs = [r.model_copy(update={"readout": "zero_shot_retrieval", "model_family": "encoder",
                                 "raw_output": json.dumps({"cosine": cos})})
            for r in plant_answers("salbench.detection.syn@n=60,n_probe=0", "clip", {i: ["Pattern"] for i in range(6)})]
    rows = {r.metric: r.value for r in score_records(recs) if r.model == "clip"}
    # top-1 chance 1/7 = 0.143, top-3 3/7 = 0.429; the 6 stimuli are all Color, the ranking Pattern > Location > Size misses them
    assert rows["retrieval_chance_top1"] == pytest.approx(1 / 7) and rows["retrieval_chance_top3"] == pytest.approx(3 / 7)
    assert rows["retrieval_top3"] == 0.0
