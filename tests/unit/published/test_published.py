"""The packaged published numbers (perceptbench/published/*.csv): every row names a section of
its paper and parses, task ids are perceptbench's, and known numbers read as the seed prints them."""

from __future__ import annotations

import pytest

from perceptbench.published import COLUMNS, PUBLISHED_DIR, available, load_published, read_published
from perceptbench.tasks import list_tasks

SEED_SECTION_WORDS = ("§", "Table", "abstract", "TL;DR", "Fig.") + tuple("ABCDEF")


def test_every_packaged_file_parses_and_every_row_names_a_section_of_its_paper():
    assert available() == ["geirhos2019", "seed000", "seed001", "seed002"]
    bases = {t.base_id for t in list_tasks()}
    for name in available():
        rows = load_published(name)
        assert rows, name
        for p in rows:
            assert p.seed == name
            assert p.section and p.section.startswith(SEED_SECTION_WORDS), (name, p.line, p.section)
            assert p.task_id == "" or p.task_id in bases, (name, p.line, p.task_id)
            assert p.model and p.metric and p.scale > 0
            assert p.run_model in ("", "*", "human:panel", "all-models", "all-pairs"), (name, p.line)
            # a number about many models says how many
            assert (p.population_size is not None) == bool(p.population), (name, p.line)


@pytest.mark.parametrize("paper, section, task, model, metric, settings, value", [
    ("seed000", "D.2", "closure.nat.silhouette", "human", "ceiling_kappa_pairwise_mean@test", {}, 0.489),
    ("seed000", "D.3", "similarity.nat.things_ooo", "human", "ceiling_test_retest", {}, 0.863),
    ("seed000", "§3", "closure.nat.silhouette", "all", "n_above_human_accuracy", {}, 34),
    ("seed001", "Table 1 (§4.1)", "salbench.detection.nat", "GPT-4o", "mean_f1", {"shots": "0"}, 47.6),
    ("seed001", "Table 1 (§4.1)", "salbench.referring.syn", "Qwen2-VL-72B", "mean_f1", {"shots": "0"}, 93.6),
    ("seed001", "Table A.1 (appendix C)", "salbench.detection.nat", "Claude-sonnet", "exact_match", {"shots": "0"},
     40.6),
    ("seed001", "Table A.1 (appendix C)", "salbench.visual_referring.nat", "GPT-4o", "f1[Pattern]", {"shots": "5"},
     39.1),
    ("seed001", "Table A.2 (appendix C)", "salbench.detection.syn", "Qwen2-VL-1.5B", "f1[Size]", {"shots": "0"}, 58.3),
    ("seed001", "Table A.3 (appendix C.1)", "salbench.visual_referring.syn", "Qwen2-VL-7B",
     "exact_match[feature_difficulty=size/hard]", {"shots": "5"}, 61.3),
    ("seed001", "Table 2 (§4.2)", "salbench.detection.nat", "CLIP-ViT-Base-Patch32", "retrieval_top3", {"shots": "0"},
     59.8),
    ("seed001", "Table 4 (§6.2)", "salbench.detection.nat", "GPT-4o", "mean_f1[distractors=>25]", {"shots": "0"},
     41.6),
    ("seed002", "§4", "vsi.pope", "LLaVA-NeXT", "auroc_max_prob[region,sigma=20]", {}, 0.85),
    ("seed002", "A", "vsi.pope", "Qwen2.5-VL-7B", "n_parse_null", {}, 333),
    ("geirhos2019", "Fig. 4; §3", "shape_bias.nat.cue_conflict", "human", "shape_bias_pooled@all", {}, 95.9),
])
def test_known_numbers_read_as_the_seed_prints_them(paper, section, task, model, metric, settings, value):
    hits = [p for p in load_published(paper) if (p.section, p.task_id, p.model, p.metric, p.settings)
            == (section, task, model, metric, settings)]
    assert [p.value for p in hits] == [value]


def test_table_1_holds_every_model_and_shot_of_the_seed():
    t1 = [p for p in load_published("seed001") if p.section == "Table 1 (§4.1)"]
    # 6 zero-shot-only models + 12 models at 0/3/5 shots, six cells each (D/R/VR x NAT/SYN)
    assert len(t1) == (6 + 12 * 3) * 6
    assert len({p.model for p in t1}) == 18


def test_published_numbers_are_in_the_papers_unit_with_a_scale():
    p = next(p for p in load_published("seed001") if p.model == "GPT-4o" and p.metric == "mean_f1")
    assert p.scale == 0.01 and p.scaled == pytest.approx(p.value / 100)


@pytest.mark.parametrize("line, error", [
    ("seed000,D.2,closure.nat.silhouette,,human,human:panel,m,abc,,,1,,n", "line 2: field 'value': 'abc' is not a number"),
    ("seed000,,closure.nat.silhouette,,human,human:panel,m,0.5,,,1,,n", "line 2: field 'section' is empty"),
    ("seed001,D.2,closure.nat.silhouette,,human,human:panel,m,0.5,,,1,,n", "field 'seed': 'seed001' is not the file's"),
    ("seed000,D.2,closure.nat.silhouette,shots,human,human:panel,m,0.5,,,1,,n", "'shots' is not key=value"),
    ("seed000,D.2,closure.nat.silhouette,,human,human:panel,m,0.5,,,0,,n", "field 'scale': '0' must be positive"),
    ("seed000,D.2,closure.nat.silhouette,,human,human:panel,m,0.5,,,1,n", "line 2: 12 fields, expected 13"),
])
def test_a_bad_row_is_one_line_naming_file_line_and_field(tmp_path, line, error):
    f = tmp_path / "seed000.csv"
    f.write_text(",".join(COLUMNS) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=None) as e:
        read_published(f)
    assert error in str(e.value) and str(f) in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_paper_names_the_packaged_ones():
    with pytest.raises(ValueError, match="packaged: geirhos2019, seed000, seed001, seed002"):
        load_published("seed009")
    assert load_published("0") == load_published("seed000") == load_published(str(PUBLISHED_DIR / "seed000.csv"))


def test_only_the_paper_comparison_reads_the_published_numbers():
    """The published numbers are never used in a computation: no module but the comparison
    (reports/paper.py) imports perceptbench.published."""
    import ast
    from pathlib import Path

    import perceptbench

    root = Path(perceptbench.__file__).parent
    readers = set()
    for f in root.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [("." * node.level) + (node.module or "")] if isinstance(node, ast.ImportFrom) else [])
            if any(n.endswith("published") or n.endswith("published.") for n in names):
                readers.add(f.relative_to(root).as_posix())
    assert readers == {"reports/paper.py"}
