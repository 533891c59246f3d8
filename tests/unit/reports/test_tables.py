"""reports/tables.py: the report's tables as data and their LaTeX form (``report --figures``)."""

import math

from perceptbench.reports.tables import Table, latex_cell, latex_escape, to_latex

from helpers.latex import body_rows, braces_balanced


def test_latex_escape_turns_every_special_character_into_a_command():
    s = latex_escape("a_b & 50% $x$ #1 {y} ~ ^ \\ <img> |")
    assert s == (r"a\_b \& 50\% \$x\$ \#1 \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{} "
                 r"\textless{}img\textgreater{} \textbar{}")
    assert latex_escape("two\nlines") == "two lines"


def test_latex_cells_for_missing_nan_integers_and_negative_zero():
    assert latex_cell(None) == "--" and latex_cell(math.nan) == "n/a"
    assert latex_cell(120) == "120" and latex_cell(0.12345) == "0.123"
    assert latex_cell(-0.25) == "$-$0.250" and latex_cell(-1e-17) == "0.000"


def test_latex_table_has_a_line_per_row_and_balanced_braces():
    t = Table("table_x", "Caption with 95% CI & a_b.", ("model", "value", "n"),
              [("m_1 {a}", 0.5, 10), ("$c$", None, 3), ("x\\y", -0.125, None)])
    tex = to_latex(t)
    body = body_rows(tex)
    assert len(body) == 3 and all(line.endswith(" \\\\") for line in body)
    assert [line.count(" & ") for line in body] == [2, 2, 2]
    assert "\\begin{tabular}{lrr}" in tex and "\\label{tab:table_x}" in tex
    assert tex.count("\\begin{") == tex.count("\\end{") == 2
    assert braces_balanced(tex)
    assert r"m\_1 \{a\}" in body[0] and r"\$c\$ & -- & 3" in body[1] and "$-$0.125" in body[2]
