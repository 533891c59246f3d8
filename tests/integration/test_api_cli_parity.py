"""``perceptbench run ...`` and ``perceptbench.run(...)`` go through one orchestration layer
(:mod:`perceptbench.api`): the same options, the same files."""

import inspect
import json

import pytest

import perceptbench as pb
from perceptbench.api import RayOptions, RunOptions

from helpers.cli import cli

TASK = "similarity.chart.mark_color"


def test_every_run_option_is_a_python_argument_and_a_cli_flag():
    import typer.main

    from perceptbench.cli import app

    py = set(inspect.signature(pb.run).parameters)
    cmd = typer.main.get_command(app).commands["run"]
    flags = {o for p in cmd.params for o in p.opts}
    # RunOptions field -> (Python argument(s), command-line flag(s))
    spelled = {"tasks": ("tasks", "--task"), "models": ("models", "--model"), "seed": ("seed", "--seed"),
               "batch_size": ("batch_size", "--batch-size"), "stimuli": ("stimuli", "--stimulus"),
               "parser": ("parser", "--parser"), "cache": ("cache", "--no-cache"),
               "executor": ("executor", "--executor"), "allow_mixed": ("allow_mixed", "--allow-mixed"),
               "families": ("families", "--family"), "conditions": ("conditions", "--condition"),
               "device": ("device", "--device"), "dtype": ("dtype", "--dtype"),
               "attn_implementation": ("attn_implementation", "--attn-implementation"),
               "roster": ("roster", "--roster"), "battery": ("battery", "--battery"),
               "judge": ("judge", "--judge"),
               "repetitions": ("repetitions", "--repetitions"), "temperature": ("temperature", "--temperature")}
    ray = {"address": ("ray_address", "--ray-address"), "gpus_per_model": ("gpus_per_model", "--gpus-per-model"),
           "workers": ("ray_workers", "--ray-workers"), "chunk_size": ("chunk_size", "--chunk-size")}
    fields = {f for f in RunOptions.__dataclass_fields__ if f != "ray"}
    assert fields == set(spelled)
    assert set(RayOptions.__dataclass_fields__) == set(ray)
    for arg, flag in [*spelled.values(), *ray.values()]:
        assert arg in py, arg
        assert flag in flags, flag
    assert "--refresh-cache" in flags


@pytest.mark.parametrize("bad, message", [({"parser": "loose"}, "--parser 'loose'"),
                                          ({"cache": "sometimes"}, "cache mode 'sometimes'"),
                                          ({"executor": "slurm"}, "--executor 'slurm'"),
                                          ({"battery": "huge"}, "--battery 'huge': must be one of default, full"),
                                          ({"dtype": "float8"}, "--dtype 'float8': must be one of float32, "
                                                                "bfloat16, float16"),
                                          ({"attn_implementation": "fast"}, "--attn-implementation 'fast'"),
                                          ({"device": "tpu9"}, "--device 'tpu9': not a torch device"),
                                          ({"judge": "gpt=openai:gpt-4o"}, "--judge gpt=openai:gpt-4o: the judge reads "
                                                                           "HallusionBench answers, and this run has no"),
                                          ({"judge": "gpt=nonsense:x"}, "unknown model 'nonsense:x'"),
                                          ({"device": "cuda", "models": ["efficientnet-lite0"]},
                                           "--device cuda: CUDA is not available here")])
def test_python_run_refuses_a_bad_option_before_writing(tmp_path, bad, message):
    with pytest.raises(ValueError, match=message):
        pb.run(tmp_path / "r", tasks=[TASK], **bad)
    assert not (tmp_path / "r").exists()


def test_python_and_cli_run_write_the_same_scores(tmp_path, mirror, monkeypatch):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.records import read_records
    from perceptbench.tasks import get_task
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    tiny = build_tiny_vlm("llava", tmp_path / "tiny-llava")
    ids = [s.stimulus_id for s in get_task(TASK).stimuli(3) if s.split == "test"][:6]
    model = f"vlm=hf:{tiny}"
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache-cli")}
    cli_out, py_out = tmp_path / "cli", tmp_path / "py"
    argv = ["run", "--out", str(cli_out), "--task", TASK, "--model", model, "--seed", "3", "--batch-size", "4",
            "--parser", "strict", "--no-cache", "--no-progress"]
    for sid in ids:
        argv += ["--stimulus", sid]
    p = cli(*argv, env=env)
    assert p.returncode == 0, p.stdout + p.stderr

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache-py"))
    df = pb.run(py_out, tasks=[TASK], models=[model], seed=3, batch_size=4, stimuli=ids, parser="strict",
                cache="off")

    for out in (cli_out, py_out):
        assert not (out / "scores.csv").exists()  # a non-default parser writes scores.strict.csv only
    assert (cli_out / "scores.strict.csv").read_bytes() == (py_out / "scores.strict.csv").read_bytes()
    assert len(df) == len((py_out / "scores.strict.csv").read_text().splitlines()) - 1

    def comparable(out):
        return [json.dumps({**r.model_dump(mode="json"), "run_meta": {k: v for k, v in r.run_meta.model_dump(
            mode="json").items() if k != "run_id"}}, sort_keys=True) for r in read_records(out / "records.jsonl")]

    assert comparable(cli_out) == comparable(py_out)
    assert sum(r.model == "vlm" for r in read_records(py_out / "records.jsonl")) == len(ids)
    for cache in ("cache-cli", "cache-py"):  # cache="off" / --no-cache: nothing written
        assert not (tmp_path / cache).exists() or not list((tmp_path / cache).rglob("*.json"))
