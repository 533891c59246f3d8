#!/usr/bin/env bash
# Measure what the README's install line costs: wall time and size of a fresh virtualenv with
# `pip install -e ".[models,test]"` (no pip cache), from a clean clone of this repository.
#   bash benchmarks/measure_install.sh [WORKDIR]      (default: a new temporary directory)
# Prints seconds and the venv size. Depends on the machine, its disk and its load.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
git clone -q "$repo" "$work/clone"
cd "$work/clone"
start=$(date +%s)
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --no-cache-dir -q -e ".[models,test]"
echo "install_seconds=$(( $(date +%s) - start ))"
echo "venv_size=$(du -sh "$work/venv" | cut -f1) ($(du -sb "$work/venv" | cut -f1) bytes)"
echo "load_avg=$(cut -d' ' -f1-3 /proc/loadavg) cpus=$(nproc)"
