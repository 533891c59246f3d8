"""VSI through a real local OpenAI-compatible server that returns logprobs: ``llama_cpp.server``
(llama-cpp-python, extra ``perceptbench[llamacpp]``) on 127.0.0.1 serving a tiny random Idefics3
converted to GGUF (text model + mmproj image encoder) by llama.cpp's own converter
(:mod:`perceptbench.testing.tiny_gguf`).

Not skipped: without llama-cpp-python or the converter the fixture fails with the command that
installs it (``.ci/run`` installs both).  The GGUF files are cached in pytest's cache directory
(or a session temporary directory under ``-p no:cacheprovider``).
"""

from __future__ import annotations

import base64
import io
import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest

from perceptbench.records import read_records

from helpers.cli import cli
from helpers.servers import free_port, stop_process  # noqa: E402
from perceptbench.vsi.samples import vsi_samples

TASK = "vsi.salbench.syn@n=4"
N_SAMPLES = 4


@pytest.fixture(scope="module")
def gguf_files(request, tmp_path_factory):
    try:
        import llama_cpp  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError as e:
        pytest.fail(f"llama-cpp-python[server] is not installed ({e}): pip install -e '.[llamacpp]' "
                    "(compiles llama.cpp, several minutes), then "
                    "`python -m perceptbench.testing.tiny_gguf fetch-converter`; .ci/run does both", pytrace=False)
    from perceptbench.testing.tiny_gguf import build_tiny_idefics3_gguf

    cache = getattr(request.config, "cache", None)
    root = cache.mkdir("tiny-idefics3-gguf") if cache is not None else tmp_path_factory.mktemp("gguf")
    try:
        return build_tiny_idefics3_gguf(root / "seed0")
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module")
def llama_server(gguf_files, tmp_path_factory):
    import httpx

    from perceptbench.testing.tiny_gguf import GGUF_MODEL_ALIAS

    model, mmproj = gguf_files
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--clip_model_path", str(mmproj),
           "--chat_format", "mtmd", "--model_alias", GGUF_MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1", "--seed", "0", "--verbose", "False"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready after 120 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield {"url": url, "model": GGUF_MODEL_ALIAS, "log": log}
    finally:
        stop_process(proc)


def _png_data_url(img) -> str:
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _ask(srv, stimulus, **fields) -> dict:
    """One chat completion straight from the server (no perceptbench code), image first."""
    import httpx

    body = {"model": srv["model"], "temperature": 0.0, **fields,
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": _png_data_url(stimulus.render())}},
                {"type": "text", "text": stimulus.meta["vsi_prompt"]}]}]}
    return httpx.post(srv["url"] + "/chat/completions", json=body, timeout=60).json()["choices"][0]


def test_vsi_family_through_llama_cpp_server(llama_server, tmp_path):
    from perceptbench.tasks import get_task

    srv = llama_server
    out = tmp_path / "run"
    # llama.cpp's servers put no cap on top_logprobs: ask for the task's top 50 (seed 002 D.1)
    # and switch off llama-cpp-python's default repeat penalty (1.1, applied before greedy choice)
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache"), "PERCEPTBENCH_MAX_TOP_LOGPROBS": "50",
           "PERCEPTBENCH_OPENAI_COMPATIBLE_EXTRA_BODY": '{"repeat_penalty": 1.0}'}
    p = cli("run", "--model", f"llama=openai-compatible:{srv['url']}#{srv['model']}", "--task", TASK, "--out",
            str(out), "--no-progress", "--batch-size", "4", env=env)
    assert p.returncode == 0, p.stdout + p.stderr + srv["log"].read_text()[-2000:]
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    assert len(recs) == 3 * N_SAMPLES and all(r.model == "llama" and r.model_family == "api" for r in recs)
    assert all("skipped" not in r.run_meta.model_extra for r in recs)
    assert all(r.run_meta.model_extra["settings"]["extra_body"] == {"repeat_penalty": 1.0} for r in recs)

    # every record carries the server's top-k distribution: token strings (no ids), descending
    # natural-log probabilities whose mass is at most 1, no empty (ambiguous) token string; this
    # server returns fewer entries than asked (byte fragments and control tokens share the key "")
    sizes = []
    for r in recs:
        v = r.run_meta.model_extra["vsi"]
        assert v["distribution_source"] == "api_top_logprobs" and v["token_ids"] is None and not v["complete"]
        assert v["top_k"] == 50 and 1 <= len(v["tokens"]) <= 50 and len(set(v["tokens"])) == len(v["tokens"])
        assert "" not in v["tokens"]
        lp = np.asarray(v["logprobs"])
        assert np.all(np.isfinite(lp)) and np.all(lp <= 0) and np.all(np.diff(lp) <= 0)
        assert np.exp(lp).sum() <= 1 + 1e-6
        sizes.append(len(v["tokens"]))
        if v["condition"] == "clean":
            assert v["max_prob"] == pytest.approx(math.exp(lp[0]))
    assert min(sizes) < 50

    # the records hold what the server answers: ask it directly (plain HTTP) for one clean stimulus
    # (greedy answer and distribution) and one blurred stimulus (distribution)
    stims = {s.stimulus_id: s for s in get_task(TASK).stimuli(0)}
    by_id = {r.stimulus_id: r for r in recs}
    clean_id = next(i for i in by_id if i.endswith("~clean"))
    assert _ask(srv, stims[clean_id], max_tokens=8, repeat_penalty=1.0)["message"]["content"] == by_id[clean_id].raw_output
    for sid in (clean_id, next(i for i in by_id if i.endswith("~whole_blur"))):
        top = _ask(srv, stims[sid], max_tokens=1, logprobs=True, top_logprobs=50)["logprobs"]["content"][0]
        direct = {}
        for e in top["top_logprobs"]:
            direct[e["token"]] = max(e["logprob"], direct.get(e["token"], -math.inf))
        direct.pop("", None)
        v = by_id[sid].run_meta.model_extra["vsi"]
        assert dict(zip(v["tokens"], v["logprobs"])) == pytest.approx(direct, abs=1e-6)

    # VSI from the records: finite, non-negative, and the image reaches the model (the blur moves
    # the distribution of at least one sample)
    ss = vsi_samples(recs)
    assert len(ss) == 2 * N_SAMPLES
    assert all(math.isfinite(s.vsi) and s.vsi >= 0 for s in ss)
    assert any(s.vsi > 1e-4 for s in ss)
    rows = {r["metric"]: r for r in json.loads((out / "scores.json").read_text()) if r["model"] == "llama"}
    for metric in ("vsi_median[region_blur,sigma=20]", "vsi_median[whole_blur,sigma=20]"):
        assert math.isfinite(rows[metric]["value"]) and rows[metric]["n"] == N_SAMPLES

    # re-scoring from the records alone, with torch unimportable, gives identical numbers
    before = (out / "scores.csv").read_text(), (out / "scores.json").read_text()
    p = cli("score", str(out / "records.jsonl"), torch="blocked")
    assert p.returncode == 0, p.stdout + p.stderr
    assert ((out / "scores.csv").read_text(), (out / "scores.json").read_text()) == before
