"""Imports run one way: scripts/check_imports.py finds no import circle and no upward import in
src/perceptbench, and it does find both kinds when they are planted."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

from helpers.paths import REPO



def _checker():
    spec = importlib.util.spec_from_file_location("check_imports", REPO / "scripts" / "check_imports.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_package_has_no_import_circle_and_no_upward_import(capsys):
    assert _checker().main(["check_imports.py", str(REPO / "src")]) == 0
    assert "no import circle, no upward import" in capsys.readouterr().out


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / "perceptbench" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def test_a_planted_circle_is_found_even_through_a_lazy_import(tmp_path):
    src = _plant(tmp_path, {"__init__.py": "", "core/__init__.py": "",
                            "core/a.py": "from . import b\n",
                            "core/b.py": "def f():\n    from .a import x\n"})
    ck = _checker()
    assert ck.circles(ck.module_graph(src)) == [["perceptbench.core.a", "perceptbench.core.b"]]


def test_an_upward_import_is_found_and_type_checking_imports_are_not(tmp_path):
    src = _plant(tmp_path, {"__init__.py": "", "metrics/__init__.py": "", "tasks/__init__.py": "",
                            "metrics/m.py": "from ..tasks import t\n",
                            "metrics/ok.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from ..tasks import t\n",
                            "tasks/t.py": "from ..metrics import ok\n"})
    ck = _checker()
    bad = ck.upward_imports(ck.module_graph(src))
    # ``from ..tasks import t`` imports the package and its module: both are upward; metrics.ok's
    # TYPE_CHECKING import is not counted
    assert [b.split(" imports ")[1].split(" ")[0] for b in bad] == ["perceptbench.tasks", "perceptbench.tasks.t"]
    assert all(b.startswith("perceptbench.metrics.m (layer 1") for b in bad)
    assert ck.main(["check_imports.py", str(src)]) == 1


def test_layers_are_found_by_the_longest_dotted_prefix():
    ck = _checker()
    assert ck.layer_of("perceptbench.vsi") == ck.layer_of("perceptbench.scorers.common")
    assert ck.layer_of("perceptbench.vsi.protocol") == ck.layer_of("perceptbench.tasks.base")
    assert ck.layer_of("perceptbench.vsi.respondent") == ck.layer_of("perceptbench.respond.base")
    assert ck.layer_of("perceptbench.vsi.suite") == ck.layer_of("perceptbench.scoring")
    assert ck.layer_of("perceptbench.vsi.new_module") == ck.layer_of("perceptbench.vsi")  # the package's layer
    assert ck.layer_of("perceptbench.vsi_protocol") is None  # a prefix ends at a dot


def test_an_upward_import_inside_a_package_that_spans_layers_is_found(tmp_path):
    src = _plant(tmp_path, {"__init__.py": "", "vsi/__init__.py": "",
                            "vsi/samples.py": "def f():\n    from .protocol import VSITask\n",
                            "vsi/protocol.py": "from .samples import f\n"})
    ck = _checker()
    bad = ck.upward_imports(ck.module_graph(src))
    assert len(bad) == 1 and bad[0].startswith("perceptbench.vsi.samples (layer 4") \
        and "imports perceptbench.vsi.protocol (layer 5" in bad[0]
    assert ck.main(["check_imports.py", str(src)]) == 1


def test_a_package_above_one_of_its_modules_is_found(tmp_path, monkeypatch):
    ck = _checker()
    monkeypatch.setattr(ck, "LAYERS", (("core", "pkg.low"), ("pkg", "__init__")))
    src = _plant(tmp_path, {"__init__.py": "", "core/__init__.py": "", "pkg/__init__.py": "",
                            "pkg/low.py": "from ..core import x\n"})
    bad = ck.upward_imports(ck.module_graph(src))
    assert bad == ["package perceptbench.pkg (layer 1: pkg/__init__) is above its module "
                   "perceptbench.pkg.low (layer 0: core/pkg.low)"]
