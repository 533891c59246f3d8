#!/usr/bin/env python3
"""Check that perceptbench's imports run one way: no import circle, no import from a lower
layer into a higher one.

Reads the source with :mod:`ast` only (imports nothing of the package, needs no install):
every ``import`` and ``from ... import`` in ``src/perceptbench``, at module level *and*
inside functions (a lazy import is still a dependency), except those under
``if TYPE_CHECKING:`` (annotations only, never run).

Two checks:

1. **No circle.** The module graph has no strongly connected component of two or more
   modules (Tarjan's algorithm).
2. **Layers.** Every module belongs to one layer of :data:`LAYERS`, by the longest name in
   ``LAYERS`` that is a dotted prefix of its name under ``perceptbench`` (``vsi.protocol``
   before ``vsi``; a package that spans layers lists its modules); a module may import its own
   layer and the layers below it, never one above.  Importing a module first runs the
   ``__init__`` of every package above it, so a package sits in a layer no higher than any of
   its modules.

Usage: ``python scripts/check_imports.py [SRC_ROOT]``; prints each circle and each upward
import, one per line, and exits 1 if there is any, else prints a one-line summary and exits 0.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "perceptbench"

#: Bottom to top.  A name is a dotted prefix under ``perceptbench`` (a sub-package, a module, or
#: a module of a package that spans layers, e.g. ``vsi.protocol``); the longest matching name
#: wins.  ``__init__`` is the package ``perceptbench`` itself.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "seeding"),
    ("metrics", "records", "sources", "published"),
    ("provenance", "record_table", "runs", "stimuli", "readouts", "models"),
    ("external",),
    ("scorers", "vsi", "vsi.samples", "vsi.cells", "vsi.scoring"),
    ("tasks", "vsi.protocol", "vsi.benchmarks"),
    ("respond", "runner", "executors", "vsi.respondent", "vsi.features", "vsi.judge"),
    ("scoring", "seeds", "analyses", "vsi.analysis", "vsi.probe", "vsi.pooled", "vsi.suite"),
    ("reports",),
    ("api", "python_api", "testing"),
    ("cli", "__init__"),
)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Yield every import node outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def module_graph(src: Path) -> dict[str, set[str]]:
    """``{module: modules it imports}`` for every module of the package under ``src``."""
    root = src / PACKAGE
    mods: dict[str, Path] = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, p in mods.items():
        pkg = name.split(".") if p.name == "__init__.py" else name.split(".")[:-1]
        for node in _imports(ast.parse(p.read_text(encoding="utf-8"), filename=str(p))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg[:len(pkg) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                candidates = [target] + [f"{target}.{a.name}" for a in node.names]
            else:
                candidates = [a.name for a in node.names]
            for c in candidates:
                if c in mods and c != name:
                    graph[name].add(c)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with two or more modules (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer_of(module: str) -> int | None:
    """The layer of ``module`` (``perceptbench.x.y``): that of the longest name in
    :data:`LAYERS` equal to ``x.y`` or a dotted prefix of it (``x``); None when none is."""
    parts = module.split(".")[1:]
    rest = ".".join(parts) if parts else "__init__"
    best, best_len = None, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (rest == name or rest.startswith(name + ".")) and len(name) > best_len:
                best, best_len = i, len(name)
    return best


def _where(module: str, layer: int) -> str:
    return f"{module} (layer {layer}: {'/'.join(LAYERS[layer])})"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """One line per import from a layer into a higher one, per module in no layer, and per
    package whose ``__init__`` sits above one of its modules (importing the module runs it)."""
    bad = []
    for a in sorted(graph):
        la = layer_of(a)
        if la is None:
            bad.append(f"{a}: in no layer of scripts/check_imports.py LAYERS")
            continue
        for b in sorted(graph[a]):
            lb = layer_of(b)
            if lb is not None and lb > la:
                bad.append(f"{_where(a, la)} imports {_where(b, lb)}")
        parts = a.split(".")
        for k in range(2, len(parts)):  # the packages above ``a``, below ``perceptbench`` itself
            pkg = ".".join(parts[:k])
            lp = layer_of(pkg) if pkg in graph else None
            if lp is not None and lp > la:
                bad.append(f"package {_where(pkg, lp)} is above its module {_where(a, la)}")
    return bad


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "src"
    graph = module_graph(src)
    problems = [f"import circle: {' <-> '.join(c)}" for c in circles(graph)] + upward_imports(graph)
    for p in problems:
        print(p)
    if problems:
        return 1
    n_edges = sum(len(v) for v in graph.values())
    print(f"{len(graph)} modules, {n_edges} imports: no import circle, no upward import "
          f"({len(LAYERS)} layers)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
