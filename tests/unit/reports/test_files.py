"""reports/files.py: the files of ``report --figures DIR`` (the full run is in tests/cli/test_report.py)."""

import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.reports import figures as F
from perceptbench.reports.files import MANIFEST, write_figure_files
from perceptbench.reports.tables import Table

TID = "similarity.chart.mark_color"


def _drawn():
    rows = [ScoreRow(TID, "m", "B", 0.5, 0.4, 0.6, 120, 0), ScoreRow(TID, "m", "position_floor", 0.33, None, None, 120, 0)]
    return F.draw_mark_color(rows)


def _write(out):
    d = _drawn()
    try:
        return write_figure_files(out, [d], [Table("table_t", "A table.", ("model", "value"), [("m", 0.5)])])
    finally:
        F.close(d)


def test_files_and_a_manifest_of_their_hashes(tmp_path):
    import hashlib

    out = tmp_path / "figs"
    paths = _write(out)
    names = sorted(p.name for p in paths)
    assert names == sorted(["mark_odd_one_out_agreement_vs_kernels." + e for e in ("pdf", "svg", "png", "csv")]
                           + ["table_t.csv", "table_t.tex", MANIFEST])
    lines = (out / MANIFEST).read_text().splitlines()
    assert len(lines) == 6
    for line in lines:  # sha256sum format: HASH, two spaces, NAME
        digest, name = line.split("  ")
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest


def test_overwrites_its_own_files_but_not_a_foreign_or_edited_one(tmp_path):
    out = tmp_path / "figs"
    _write(out)
    _write(out)  # its own, unchanged: overwritten
    tex = out / "table_t.tex"
    tex.write_text(tex.read_text() + "% tuned by hand\n")
    with pytest.raises(ValueError, match=r"table_t.tex exists and was changed since perceptbench report wrote it"):
        _write(out)
    assert tex.read_text().endswith("% tuned by hand\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "table_t.csv").write_text("my data\n")
    with pytest.raises(ValueError, match=r"table_t.csv exists and was not written by perceptbench report; "
                                         r"refusing to overwrite it"):
        _write(other)
    assert sorted(p.name for p in other.iterdir()) == ["table_t.csv"]  # nothing written
    assert (other / "table_t.csv").read_text() == "my data\n"


def test_a_later_report_keeps_the_entries_of_files_it_did_not_rewrite(tmp_path):
    out = tmp_path / "figs"
    d = _drawn()
    write_figure_files(out, [d], [Table("table_old", "Old.", ("a",), [(1,)])])
    write_figure_files(out, [d], [])
    F.close(d)
    assert "table_old.tex" in (out / MANIFEST).read_text()
    (out / "table_old.tex").unlink()
    d = _drawn()
    write_figure_files(out, [d], [])
    F.close(d)
    text = (out / MANIFEST).read_text()
    assert "table_old.tex" not in text and "table_old.csv" in text  # a deleted file leaves the list
