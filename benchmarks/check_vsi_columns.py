"""Check, on a whole records file, that the VSI fields ``score`` reads in duckdb's pass
(:func:`perceptbench.record_table.read_columns`, :meth:`perceptbench.vsi.samples.VSIReader.from_fields`)
are the record path's values, every float bit for bit (issue 25).

    PYTHONPATH=src python benchmarks/check_vsi_columns.py RECORDS.jsonl

For every VSI task the columns take: (1) every log-probability and token id duckdb read equals, bit for
bit (``float64`` viewed as ``uint64``), ``json.loads`` of the line; (2) the reader built from the
columns equals the record path's :class:`~perceptbench.vsi.samples.VSIReader` (each line parsed and
validated again) field for field: pairing codes, skips, votes, ``sigma_px`` / ``max_prob`` /
``verbal_conf`` (type and value), fallbacks, mismatches, the distribution tables (bit for bit) and
their flags.  Prints one line per task; exits 1 on the first difference.  A check, not a test: it
reads the file twice (10^6 records: a few minutes).
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main(path: str) -> int:
    from perceptbench.record_table import read_columns
    from perceptbench.vsi.samples import VSIReader

    cols = read_columns(path)
    if cols is None:
        print("the file needs the validating reader: no columns")
        return 1
    for tid, c in cols.items():
        f = c.vsi_fields
        if f is None:
            continue
        rows = set(c.row.tolist())
        lp, ids = [], []
        with open(path, "rb") as fh:
            for i, line in enumerate(fh):
                if i in rows:
                    v = json.loads(line)["run_meta"].get("vsi") or {}
                    lp += [float(x) for x in v.get("logprobs") or []]
                    ids += list(v.get("token_ids") or [])
        lp_a = np.array(lp, np.float64)
        if not (np.array_equal(f["lp"].view(np.uint64), lp_a.view(np.uint64)) and np.array_equal(f["ids"], ids)):
            print(f"{tid}: duckdb's lists differ from json.loads")
            return 1
        clean = c.readout == (c.readouts.index("vlm_vsi_clean") if "vlm_vsi_clean" in c.readouts else -1)
        a = VSIReader.from_fields(f, clean)
        if a is None:
            print(f"{tid}: not taken by the columns (record path)")
            continue
        b = VSIReader()
        for r in cols.iter_records(tid):
            b.add(r)
        b.finish()
        same = all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("pairs_in", "trial_skip", "vote", "dist_row"))
        same &= all([a.values[k][i] for i in getattr(a, k)] == [b.values[k][i] for i in getattr(b, k)]
                    for k in ("sample", "image", "benchmark", "condition", "region", "sha"))
        same &= [a.skips[i] for i in a.skip] == [b.skips[i] for i in b.skip]
        same &= all([(type(x), x) for x in getattr(a, k)] == [(type(x), x) for x in getattr(b, k)]
                    for k in ("sigma", "max_prob", "verbal_conf_of_pair", "verbal_conf", "mismatch", "fallback"))
        same &= np.array_equal(a.dist.flags, b.dist.flags) and np.array_equal(a.dist.where, b.dist.where)
        same &= a.dist.lp.keys() == b.dist.lp.keys() and all(
            np.array_equal(a.dist.lp[k].view(np.uint64), b.dist.lp[k].view(np.uint64))
            and np.array_equal(a.dist.keys[k], b.dist.keys[k]) for k in b.dist.lp)
        if not same:
            print(f"{tid}: the reader from the columns differs from the record path")
            return 1
        floats = sum(x is not None for k in ("sigma", "max_prob", "verbal_conf_of_pair") for x in getattr(a, k))
        print(f"{tid}: {c.n} records; {lp_a.size} log-probabilities and {len(ids)} token ids bit-identical to "
              f"json.loads; {floats} sigma/max_prob/verbal_conf values and the reader equal to the record path")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
