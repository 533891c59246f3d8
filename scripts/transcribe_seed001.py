"""Transcribe seed 001's (SalBench) numeric tables into ``src/perceptbench/published/seed001.csv``.

Run once by hand on the seed text as the project received it::

    python scripts/transcribe_seed001.py /work/shared/seeds/001_de885d177680bb4c.txt > /tmp/t.csv

It parses Table 1 (§4.1, F1), Table A.1 (natural split: exact match and F1 per category), Table A.2
(synthetic split: the same), Table A.3 (synthetic accuracy per category and difficulty) and Table 2
(§4.2, zero-shot retrieval); the remaining rows of the packaged file (Tables 3 and 4, §3, §4.2 text,
§5) were typed in by hand.  Model names are written as the SalBench roster's ``seed_name``
(perceptbench/models/rosters/seed001*.toml); the name as the table prints it is kept in ``note``.
Values are the seed's percentages (``scale`` = 0.01 turns them into perceptbench's fractions).
"""

from __future__ import annotations

import csv
import re
import sys

CANON = {  # name as a table prints it -> the roster's seed_name
    "Claude": "Claude-sonnet", "Claude-sonet": "Claude-sonnet", "Claude-sonnet": "Claude-sonnet",
    "LLama3.2-Vision-11B": "Llama3.2-Vision-11B", "Idefic2-8B": "Idefics2-8B", "Idefic3-8B": "Idefics3-8B",
    "Qwen2-VL-2B": "Qwen2-VL-1.5B", "InternVL-8B": "InternVL-2-8B", "InternVL-2-8B": "InternVL-2-8B",
    "InyternVL-2-4B": "InternVL-4B", "Qwen2-VL72B": "Qwen2-VL-72B", "Phi3.5-VM-CM--sion-3.5B": "Phi3.5-Vision-3.5B",
    "Phi3.5-Vísion-3.5B": "Phi3.5-Vision-3.5B", "NVLM": "NVLM-D-72B",
}
TASKS = {"D": "detection", "R": "referring", "VR": "visual_referring"}
COLS = ["seed", "section", "task_id", "settings", "model", "run_model", "metric", "value", "ci_low", "ci_high",
        "scale", "population", "note"]


def canon(name: str) -> tuple[str, str]:
    name = re.sub(r"\s*\[\d+\]\s*$", "", name.strip())
    c = CANON.get(name, name)
    return c, ("" if c == name else f"printed as '{name}'")


def row(section, split, kind, shots, model, metric, value, note):
    return {"seed": "seed001", "section": section, "task_id": f"salbench.{TASKS[kind]}.{split}",
            "settings": f"shots={shots}", "model": model, "run_model": "", "metric": metric, "value": value,
            "ci_low": "", "ci_high": "", "scale": "0.01", "population": "", "note": note}


def table1(text: str) -> list[dict]:
    line = next(l for l in text.splitlines() if l.startswith("Method Shot Detection"))
    body = re.sub(r"\s*\[\d+\]", "", line.split("NAT SYN NAT SYN NAT SYN", 1)[1])
    toks = re.findall(r"[A-Za-z][^\s]*(?: [0-9.]+-[0-9]+B)?(?:\[\d+\])?(?: \[\d+\])?|\d+\.?\d*", body)
    out, model, note, i = [], None, "", 0
    # tokens: NAME SHOT v*6 [SHOT v*6]...
    while i < len(toks):
        t = toks[i]
        if re.fullmatch(r"[035]", t) and i + 6 < len(toks) and all(re.fullmatch(r"\d+\.?\d*", x) for x in toks[i + 1:i + 7]):
            vals = toks[i + 1:i + 7]
            for (kind, split), v in zip([(k, s) for k in ("D", "R", "VR") for s in ("nat", "syn")], vals):
                out.append(row("Table 1 (§4.1)", split, kind, t, model, "mean_f1", v, note))
            i += 7
        else:
            name = t
            while i + 1 < len(toks) and not re.fullmatch(r"[035]", toks[i + 1]):
                i += 1
                name += " " + toks[i]
            model, note = canon(name)
            i += 1
    return out


def tab_lines(text: str, start: str, stop: str) -> list[list[str]]:
    lines = text.splitlines()
    a = next(i for i, l in enumerate(lines) if l.startswith(start))
    b = next(i for i in range(a, len(lines)) if lines[i].startswith(stop))
    return [l.split("\t") for l in lines[a:b] if "\t" in l]


def table_a12(text: str, split: str) -> list[dict]:
    if split == "nat":
        rows = tab_lines(text, "Model\tShot\tOverall Matching", "Table A.1")
        cats = ["Orientation", "Color", "Size", "Focus", "Shape", "Location", "Pattern"]
        section = "Table A.1 (appendix C)"
    else:
        lines = text.split("Table A.1:", 1)[1]
        rows = tab_lines(lines, "Model\tShot\tOverall Matching", "Table A.2")
        cats = ["Orientation", "Color", "Size"]
        section = "Table A.2 (appendix C)"
    out, model, note = [], None, ""
    for parts in rows:
        if not re.fullmatch(r"[035]", parts[1].strip()):
            continue
        if parts[0].strip():
            model, note = canon(parts[0])
        shots, vals = parts[1].strip(), parts[2:]
        metrics = ["exact_match"] * 3 + ["mean_f1"] * 3 + [f"f1[{c}]" for c in cats for _ in range(3)]
        assert len(vals) == len(metrics), (parts, len(vals), len(metrics))
        for j, (m, v) in enumerate(zip(metrics, vals)):
            out.append(row(section, split, ("D", "R", "VR")[j % 3], shots, model, m, v.strip(), note))
    return out


def table_a3(text: str) -> list[dict]:
    body = text.split("\t\t\tColor\t\t\tOrientation\t\t\tSize", 1)[1].split("Table A.3:", 1)[0]
    groups, pending = [], []
    for l in body.splitlines():
        parts = l.split("\t")
        if len(parts) < 12 or parts[1].strip() not in ("0", "3", "5"):
            continue
        pending.append(parts)
        if parts[2].strip() == "hard":
            name = parts[0].strip()
            groups.append((name, pending))
            pending = []
    out = []
    for name, rows3 in groups:
        model, note = canon(name)
        note = "; ".join(x for x in (note, "the model's name is printed on the group's 'hard' line") if x)
        for parts in rows3:
            shots, diff, vals = parts[1].strip(), parts[2].strip(), parts[3:12]
            for j, v in enumerate(vals):
                feat = ("color", "orientation", "size")[j // 3]
                out.append(row("Table A.3 (appendix C.1)", "syn", ("D", "R", "VR")[j % 3], shots, model,
                               f"exact_match[feature_difficulty={feat}/{diff}]", v.strip(), note))
    return out


def table2(text: str) -> list[dict]:
    line = next(l for l in text.splitlines() if l.startswith("Models SYN NAT Top1 Top3"))
    body = line.split("Top1 Top3 Top1 Top3", 1)[1]
    out = []
    for m in re.finditer(r"([A-Za-z][\w.-]*)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", body):
        name, vals = m.group(1), m.groups()[1:]
        for (split, k), v in zip([("syn", 1), ("syn", 3), ("nat", 1), ("nat", 3)], vals):
            r = row("Table 2 (§4.2)", split, "D", "0", name, f"retrieval_top{k}", v, "zero-shot retrieval")
            if name == "Random":
                r.update(model="chance", run_model="*", metric=f"retrieval_chance_top{k}",
                         note="the seed's Random row; SPEC §5: not reproducible from its description, "
                              "perceptbench reports chance for the label distribution actually used")
            out.append(r)
    return out


def table3(text: str) -> list[dict]:
    body = text.split("Model\tCategory\tLevel\tAccuracy", 1)[1].split("Table 3:", 1)[0]
    out, model, feat = [], None, None
    for l in body.splitlines():
        parts = [p.strip() for p in l.split("\t")]
        if len(parts) < 4 or parts[-4] not in ("Easy", "Medium", "Hard"):
            continue
        if parts[0]:
            model = canon(re.sub(r"^1-6 ", "", parts[0]))[0]
            feat = parts[1].lower()
        diff = parts[-4].lower()
        for kind, v in zip(("D", "R", "VR"), parts[-3:]):
            out.append(row("Table 3 (§6.1)", "syn", kind, "0", model,
                           f"exact_match[feature_difficulty={feat}/{diff}]", v,
                           "shots not stated; the values are those of Table A.3's 0-shot rows"))
    return out


def table4(text: str) -> list[dict]:
    body = text.split("# Distractors\t", 1)[1].split("Table 4:", 1)[0]
    cats = ["Orientation", "Color", "Focus", "Shape", "Size", "Location", "Pattern"]
    out, model = [], None
    for l in body.splitlines():
        parts = [p.strip() for p in l.split("\t")]
        if len(parts) == 1 and parts[0]:
            model = parts[0]
            continue
        if len(parts) != 9:
            continue
        bin_ = parts[0].replace("$<$", "<").replace("$>$", ">")
        for c, v in zip(cats + ["mean"], parts[1:]):
            metric = f"mean_f1[distractors={bin_}]" if c == "mean" else f"f1[{c}][distractors={bin_}]"
            out.append(row("Table 4 (§6.2)", "nat", "D", "0", model, metric, v,
                           "the caption says accuracy; the columns are per-category F1 and their mean"))
    return out


def main(path: str) -> None:
    text = open(path, encoding="utf-8").read()
    rows = table1(text) + table_a12(text, "nat") + table_a12(text, "syn") + table_a3(text) + table2(text) + table3(text) + table4(text)
    w = csv.DictWriter(sys.stdout, COLS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1])
