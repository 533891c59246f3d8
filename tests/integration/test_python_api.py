"""The Python API: import perceptbench, run, score, load records, list tasks and models;
the example in docs/running.md runs as written."""

import os
import re
import subprocess
import sys

import pytest

import perceptbench as pb

from helpers.paths import REPO



def test_import_exposes_the_documented_surface_without_torch():
    code = ("import sys, perceptbench as pb; "
            "assert all(callable(getattr(pb, f)) for f in pb.__all__ if f != '__version__'); "
            "assert {'run','score','load_records','list_tasks','list_models'} <= set(pb.__all__); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for f in ("run", "score", "load_records", "list_tasks", "list_models", "scores_frame"):
        doc = getattr(pb, f).__doc__
        assert doc and len(doc) > 80, f


def test_listings_are_dataframes():
    import pandas as pd

    t = pb.list_tasks()
    assert isinstance(t, pd.DataFrame) and "closure.nat.silhouette" in set(t.task_id)
    assert "similarity.nat.things_ooo" in set(t.task_id)  # registered; refuses with one line without its OSF files
    m = pb.list_models()
    assert isinstance(m, pd.DataFrame) and any(s.startswith("timm:") for s in m.syntax)


def test_score_and_load_records_on_human_runs(tmp_path, mirror):
    from perceptbench.runner import RunConfig, run

    for name in ("a", "b"):
        run(RunConfig(out=tmp_path / name, tasks=["similarity.chart.mark_color"], models=[]), progress=False)
    recs = pb.load_records(tmp_path / "a", tmp_path / "b")
    assert len(recs) == len(pb.load_records(tmp_path / "a"))
    df = pb.score(tmp_path / "a", tmp_path / "b")
    assert list(df.columns) == list(pb.python_api.SCORE_COLUMNS) and str(df.value.dtype) == "float64"
    assert not (tmp_path / "a" / "scores.csv").exists()  # score() writes only with out=
    pb.score(tmp_path / "a", out=tmp_path / "s.csv")
    assert (tmp_path / "s.csv").exists()


def test_python_api_example_in_the_docs_runs_as_written(tmp_path, mirror):
    text = (REPO / "docs" / "running.md").read_text()
    section = text.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PERCEPTBENCH_MIRROR": str(mirror)}, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "similarity.chart.mark_color|" in p.stdout and "efficientnet-lite0" in p.stdout
    assert (tmp_path / "runs" / "notebook" / "scores.csv").exists()


def test_python_score_accepts_a_list_of_runs(human_run):
    """Before: pb.score(["a", "b"]) raised a raw TypeError from pathlib."""
    import perceptbench as pb

    listed = pb.score([human_run, human_run])
    assert listed.equals(pb.score(human_run, human_run)) and len(listed) > 0
    assert len(pb.load_records((human_run,))) == len(pb.load_records(human_run))


def test_python_run_refuses_a_foreign_directory(tmp_path):
    import perceptbench as pb

    d = tmp_path / "notarun"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="did not write"):
        pb.run(d, tasks=["similarity.chart.mark_color"], models=[])
    assert sorted(os.listdir(d)) == ["notes.txt"]
