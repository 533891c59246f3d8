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
2. **Layers.** Every module belongs to one layer of :data:`LAYERS` (by its first name under
   ``perceptbench``); a module may import its own layer and the layers below it, never one
   above.

Usage: ``python scripts/check_imports.py [SRC_ROOT]``; prints each circle and each upward
import, one per line, and exits 1 if there is any, else prints a one-line summary and exits 0.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "perceptbench"

#: Bottom to top.  A name is the first part under ``perceptbench`` (a sub-package or a module);
#: ``__init__`` is the package itself.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "seeding"),
    ("metrics", "records", "sources"),
    ("provenance", "record_table", "runs", "stimuli", "readouts", "models"),
    ("external",),
    ("scorers",),
    ("tasks",),
    ("vsi_features", "vlm_runner", "vsi_runner", "respond", "runner", "executors"),
    ("scoring",),
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
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else "__init__"
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """One line per import from a layer into a higher one, and per module in no layer."""
    bad = []
    for a in sorted(graph):
        la = layer_of(a)
        if la is None:
            bad.append(f"{a}: in no layer of scripts/check_imports.py LAYERS")
            continue
        for b in sorted(graph[a]):
            lb = layer_of(b)
            if lb is not None and lb > la:
                bad.append(f"{a} (layer {la}: {'/'.join(LAYERS[la])}) imports {b} "
                           f"(layer {lb}: {'/'.join(LAYERS[lb])})")
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
