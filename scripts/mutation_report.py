"""Run mutation testing (mutmut 3) on the modules listed in pyproject.toml and
print the kill rate per module.

Usage (from the repository root, not part of CI; a few minutes per module on 2 cores)::

    PERCEPTBENCH_MIRROR=/path/to/data /work/venv/bin/python scripts/mutation_report.py [--max-children 1]
    /work/venv/bin/python scripts/mutation_report.py --no-run   # re-print the last results

Which modules are mutated (``only_mutate``) and which fast tests each mutant runs
(``pytest_add_cli_args_test_selection``) are set in ``[tool.mutmut]`` in pyproject.toml.
Mutants reviewed as equivalent (no behaviour change) are listed in
tests/mutation_equivalents.md; they are reported separately, not counted as killed.
Exit status: 0 when the run finished, whatever the kill rate; 1 when mutmut failed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EQUIVALENTS = REPO / "tests" / "mutation_equivalents.md"
LINE = re.compile(r"^\s*(?P<name>[\w.]+)__mutmut_(?P<n>\d+):\s*(?P<status>.+?)\s*$")


def _mutmut(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mutmut")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mutmut"]
    return subprocess.run(cmd + list(args), cwd=REPO, capture_output=True, text=True)


def _equivalents() -> set[str]:
    """Mutant names listed in the equivalents file (first backticked token of a line)."""
    if not EQUIVALENTS.exists():
        return set()
    return set(re.findall(r"`([\w.]+__mutmut_\d+)`", EQUIVALENTS.read_text()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-children", type=int, default=1, help="parallel mutant workers (default 1)")
    ap.add_argument("--no-run", action="store_true", help="only summarise the last run's results")
    args = ap.parse_args()
    if not args.no_run:
        run = _mutmut("run", "--max-children", str(args.max_children))
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
        mutant = f"{m['name']}__mutmut_{m['n']}"
        status = "equivalent" if m["status"] == "survived" and mutant in equivalent else m["status"]
        per_module[module][status].append(mutant)
    if not per_module:
        print("no mutmut results found; run without --no-run first", file=sys.stderr)
        return 1
    print(f"{'module':50s} {'killed':>7s} {'equiv':>6s} {'total':>6s} {'kill rate':>10s} {'(excl. equiv)':>14s}")
    for module in sorted(per_module):
        by = per_module[module]
        total = sum(len(v) for v in by.values())
        killed = len(by["killed"]) + len(by["timeout"])  # a mutant that hangs the tests is caught
        eq = len(by["equivalent"])
        rate = killed / total
        rate_x = killed / (total - eq) if total > eq else float("nan")
        print(f"{module:50s} {killed:7d} {eq:6d} {total:6d} {rate:10.1%} {rate_x:14.1%}")
    for module in sorted(per_module):
        for status, names in sorted(per_module[module].items()):
            if status in ("killed", "timeout", "equivalent"):
                continue
            print(f"\n{module}: {len(names)} {status} (see: mutmut show NAME)")
            for name in names:
                print(f"  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
