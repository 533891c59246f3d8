"""Run mutation testing (mutmut 3) on the modules listed in pyproject.toml and
print the kill rate per module.

Usage (from the repository root, not part of CI; a few minutes per module on 2 cores)::

    PERCEPTBENCH_MIRROR=/path/to/data /work/venv/bin/python scripts/mutation_report.py [--max-children 1]
    /work/venv/bin/python scripts/mutation_report.py --no-run   # re-print the last results
    /work/venv/bin/python scripts/mutation_report.py --module tasks.gestalt   # one module (or several)

Which modules are mutated (``only_mutate``) and which fast tests each mutant runs
(``pytest_add_cli_args_test_selection``) are set in ``[tool.mutmut]`` in pyproject.toml.
Modules whose file also holds non-science code (stimulus renderers) are restricted to
the science functions by mutant-name globs in ``[tool.mutation_report] only_functions``;
only those mutants of such a module are run and reported.
Mutants reviewed as equivalent (no behaviour change) are listed in
tests/mutation_equivalents.md; they are reported separately, not counted as killed.
A mutant whose tests time out (an endless loop) or crash the test process (mutmut's
"segfault", e.g. memory exhausted) is counted as killed: the tests did not pass.
Exit status: 0 when the run finished, whatever the kill rate; 1 when mutmut failed.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EQUIVALENTS = REPO / "tests" / "mutation_equivalents.md"
LINE = re.compile(r"^\s*(?P<name>[\w.]+)__mutmut_(?P<n>\d+):\s*(?P<status>.+?)\s*$")


def _mutmut(*args: str) -> subprocess.CompletedProcess:
    """Run mutmut in the repository root.  mutmut runs the tests from its ``mutants/`` copy, so a
    relative ``PERCEPTBENCH_MIRROR`` (e.g. the README's ``../shared/data``) is made absolute first."""
    exe = Path(sys.executable).with_name("mutmut")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mutmut"]
    env = dict(os.environ)
    if env.get("PERCEPTBENCH_MIRROR"):
        env["PERCEPTBENCH_MIRROR"] = os.path.abspath(env["PERCEPTBENCH_MIRROR"])
    return subprocess.run(cmd + list(args), cwd=REPO, capture_output=True, text=True, env=env)


def _selection() -> tuple[list[tuple[str, str]], list[str]]:
    """((module, mutant-name glob) pairs to run, the ``only_functions`` globs) from pyproject.toml.

    A module listed in ``[tool.mutmut] only_mutate`` is run whole (``pkg.mod.*``) unless
    some ``only_functions`` glob names it; then only those globs are run.
    """
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import toml as tomllib  # mutmut's own dependency there
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    only_mutate = cfg["tool"]["mutmut"]["only_mutate"]
    only_functions = list(cfg.get("tool", {}).get("mutation_report", {}).get("only_functions", []))
    globs: list[tuple[str, str]] = []
    for path in only_mutate:
        module = path.removeprefix("src/").removesuffix(".py").replace("/", ".")
        restricted = [g for g in only_functions if g.startswith(module + ".")]
        globs.extend((module, g) for g in restricted or [module + ".*"])
    return globs, only_functions


def _equivalents() -> set[str]:
    """Mutant names listed in the equivalents file (first backticked token of a line)."""
    if not EQUIVALENTS.exists():
        return set()
    return set(re.findall(r"`([\w.]+__mutmut_\d+)`", EQUIVALENTS.read_text()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-children", type=int, default=1, help="parallel mutant workers (default 1)")
    ap.add_argument("--no-run", action="store_true", help="only summarise the last run's results")
    ap.add_argument("--module", action="append", default=[], metavar="NAME",
                    help="run and report only the modules whose dotted name contains NAME "
                         "(tasks.gestalt; tasks for every task module, vsi for the VSI package); repeatable; "
                         "default: every configured module")
    args = ap.parse_args()
    globs, only_functions = _selection()
    wanted = [m.strip(".") for m in args.module]

    def chosen(module: str) -> bool:
        return not wanted or any(f".{w}." in f".{module}." for w in wanted)

    globs = [g for module, g in globs if chosen(module)]
    if not globs:
        print(f"no configured module matches --module {' '.join(wanted)}", file=sys.stderr)
        return 1
    if not args.no_run:
        run = _mutmut("run", "--max-children", str(args.max_children), *globs)
        if run.returncode != 0:
            print(run.stdout[-3000:], run.stderr[-3000:], sep="\n", file=sys.stderr)
            print(f"mutmut run failed with exit status {run.returncode}", file=sys.stderr)
            return 1
    res = _mutmut("results", "--all", "true")
    equivalent = _equivalents()
    per_module: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in res.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        module, _, func = m["name"].rpartition(".")
        if not chosen(module):
            continue
        mutant = f"{m['name']}__mutmut_{m['n']}"
        if any(g.startswith(module + ".") for g in only_functions) and not any(
                fnmatch.fnmatch(mutant, g) for g in only_functions):
            continue  # a non-science function of a restricted module
        status = "equivalent" if m["status"] == "survived" and mutant in equivalent else m["status"]
        per_module[module][status].append(mutant)
    if not per_module:
        print("no mutmut results found; run without --no-run first", file=sys.stderr)
        return 1
    print(f"{'module':50s} {'killed':>7s} {'equiv':>6s} {'total':>6s} {'kill rate':>10s} {'(excl. equiv)':>14s}")
    for module in sorted(per_module):
        by = per_module[module]
        total = sum(len(v) for v in by.values())
        killed = len(by["killed"]) + len(by["timeout"]) + len(by["segfault"])  # a mutant that hangs or crashes the tests is caught
        eq = len(by["equivalent"])
        rate = killed / total
        rate_x = killed / (total - eq) if total > eq else float("nan")
        print(f"{module:50s} {killed:7d} {eq:6d} {total:6d} {rate:10.1%} {rate_x:14.1%}")
    for module in sorted(per_module):
        for status, names in sorted(per_module[module].items()):
            if status in ("killed", "timeout", "segfault", "equivalent"):
                continue
            print(f"\n{module}: {len(names)} {status} (see: mutmut show NAME)")
            for name in names:
                print(f"  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
