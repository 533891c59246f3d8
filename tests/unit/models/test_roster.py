"""Rosters as presets (issue 22 item 2): the packaged rosters parse with the seeds' names and
counts, a bad roster file is one line naming file and field, pins resolve into specs, and
offline every entry that cannot load is named at once."""

from __future__ import annotations

import pytest

from perceptbench.models.base import ModelLoadError
from perceptbench.models.roster import (UNPINNED, RosterError, check_available, declared_models, load_roster,
                                        packaged_rosters)

# the names as each seed prints them (seed 000: the 11 its text names; Table A1's body is not in the seed)
SEED_NAMES = {
    "seed000": ["DeiT-T", "I-JEPA-H/14", "DINOv2", "CLIP", "SigLIP", "BEiT", "MAE", "LLaVA-1.5-7B", "qwen2-vl-2b",
                "Claude-Opus-4.6", "GPT-5-Nano"],
    "seed001": ["Claude-sonnet", "NVLM-D-72B", "Molmo-7B", "Molmo-72B", "Llama3.2-Vision-11B", "PaliGemma-3B-448",
                "Phi3-4B", "Phi3.5-Vision-3.5B", "LLava 1.6-7B", "Idefics2-8B", "Idefics3-8B", "VILA-1.5-8B",
                "Qwen2-VL-1.5B", "Qwen2-VL-7B", "Qwen2-VL-72B", "InternVL-4B", "InternVL-2-8B", "GPT-4o"],
    "seed001-backbones": ["Siglip-so400m-patch14-384", "CLIP-ViT-Base-Patch32", "CLIP-ViT-Base-Patch16",
                          "CLIP-ViT-Large-Patch14", "CLIP-ViT-Large-Patch14-336"],
    "seed002": ["Qwen2.5-VL-7B", "Qwen2.5-VL-32B", "Qwen3-VL-8B", "LLaVA-NeXT", "LLaVA-1.5-7B"],
}
SEED_TOTALS = {"seed000": 45, "seed001": 18, "seed001-backbones": 5, "seed002": 6}


def test_every_packaged_roster_parses_with_the_seeds_names_and_counts():
    assert sorted(packaged_rosters()) == sorted(SEED_NAMES)
    for name, names in SEED_NAMES.items():
        r = load_roster(name)
        assert r.name == name and r.seed_total == SEED_TOTALS[name]
        assert [e.seed_name for e in r.entries] == names
        for e in r.entries:
            assert e.spec_basis in ("seed", "inferred", "choice") and e.meta.family is not None
            assert e.meta.access_or_implied in ("open", "closed")
            # no seed gives a hub revision: every packaged entry says so rather than invent one
            assert e.revision == UNPINNED and e.revision_note
            if e.spec_basis == "choice":
                assert e.note, e.name  # a choice says what it chose between


def test_seed002_declares_architecture_families_for_the_vsi_means():
    r = load_roster("seed002")
    arch = {e.name: e.meta.architecture for e in r.entries}
    assert arch == {"qwen2.5-vl-7b": "qwen-vl", "qwen2.5-vl-32b": "qwen-vl", "qwen3-vl-8b": "qwen-vl",
                    "llava-next": "llava", "llava-1.5-7b": "llava"}
    assert {e.meta.family for e in r.entries} == {"open-vlm"}
    assert "sixth is not named" in r.note


def test_seed000_families_follow_the_seeds_taxonomy():
    fam = {e.seed_name: e.meta.family for e in load_roster("seed000").entries}
    assert fam["BEiT"] == fam["MAE"] == "mim" and fam["DINOv2"] == fam["I-JEPA-H/14"] == "ssl"
    assert fam["CLIP"] == fam["SigLIP"] == "clip-like" and fam["DeiT-T"] == "supervised"
    assert fam["LLaVA-1.5-7B"] == fam["qwen2-vl-2b"] == "open-vlm"
    assert fam["Claude-Opus-4.6"] == fam["GPT-5-Nano"] == "closed-vlm"


def _write(tmp_path, body, head='[roster]\nname = "mine"\nsource = "my lab"\n'):
    p = tmp_path / "mine.toml"
    p.write_text(head + body)
    return p


def test_a_user_roster_resolves_pinned_and_unpinned_entries(tmp_path):
    p = _write(tmp_path, '[[model]]\nname = "a"\nspec = "hf:Org/A"\nrevision = "0123abcd"\nfamily = "ssl"\n'
                         'params = "86M"\n\n[[model]]\nname = "b"\nspec = "hf:/local/b"\n')
    r = load_roster(p)
    assert r.model_args() == ["a=hf:Org/A@0123abcd", "b=hf:/local/b"]
    meta = declared_models(r.model_args(), r)
    assert meta["a"] == {"spec": "hf:Org/A", "revision": "0123abcd", "roster": "mine", "seed_name": None,
                         "family": "ssl", "objective": None, "params": 86_000_000, "vision_tower": None,
                         "access": None, "architecture": None}
    assert meta["b"]["revision"] == UNPINNED


@pytest.mark.parametrize("body, where, words", [
    ('[[model]]\nname = "a"\nspec = "hf:Org/A"\nparams = "lots"\n', "model[0] (a).params", "not a parameter count"),
    ('[[model]]\nname = "a"\nspec = "hf:Org/A"\nfamily = "vlm"\n', "model[0] (a).family", "not a family"),
    ('[[model]]\nname = "a"\nspec = "hf:Org/A"\ncolour = "red"\n', "model[0] (a).colour", "unknown field"),
    ('[[model]]\nname = "a"\n', "model[0] (a).spec", "required field missing"),
    ('[[model]]\nname = "a"\nspec = "nokind:x"\n', "model[0] (a).spec", "unknown model"),
    ('[[model]]\nname = "a"\nspec = "hf:Org/A@v1"\n', "model[0] (a).spec", "revision field"),
    ('[[model]]\nname = "a"\nspec = "openai:gpt-4o"\nrevision = "abc"\n', "model[0] (a).revision", "only an hf: hub id"),
    ('[[model]]\nname = "a"\nspec = "hf:Org/A"\n[[model]]\nname = "a"\nspec = "hf:Org/B"\n', "model[1] (a).name",
     "also model[0]"),
    ('[[model]]\nname = "a"\nspec = "hf:Org/A"\nspec_basis = "guess"\n', "model[0] (a).spec_basis", "not one of"),
    ('[[model]]\nname = "a b"\nspec = "hf:Org/A"\n', "model[0] (a b).name", "letters, digits"),
    ('', "model", "no [[model]] entries"),
    ('[[model]]\nname = "a"\nspec = "hf:Org/A"\n[extra]\nx = 1\n', "extra", "unknown table"),
    ('[[model]\nname = "a"\n', "", "not valid TOML"),
])
def test_a_bad_roster_file_is_one_line_naming_file_and_field(tmp_path, body, where, words):
    p = _write(tmp_path, body)
    with pytest.raises(RosterError) as e:
        load_roster(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{p}: {where}") and words in msg, msg


def test_a_roster_without_its_header_fields_names_them(tmp_path):
    p = _write(tmp_path, '[[model]]\nname = "a"\nspec = "hf:Org/A"\n', head='[roster]\nname = "x"\n')
    with pytest.raises(RosterError, match=r"roster\.source: required field missing"):
        load_roster(p)
    with pytest.raises(RosterError, match="no packaged roster of that name"):
        load_roster(tmp_path / "absent.toml")


@pytest.fixture
def offline_empty_hf_cache(monkeypatch, tmp_path):
    import huggingface_hub.constants as c

    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_offline_every_missing_entry_is_named_in_one_line(offline_empty_hf_cache):
    r = load_roster("seed002")
    with pytest.raises(ModelLoadError) as e:
        check_available(r)
    msg = str(e.value)
    assert "\n" not in msg and "5 of 5 models cannot load here" in msg and "HF_HUB_OFFLINE is set" in msg
    for entry in r.entries:
        repo = entry.spec.removeprefix("hf:")
        assert f"{entry.name}: download {entry.spec} (huggingface-cli download {repo})" in msg


def test_cached_and_local_entries_pass_and_api_keys_are_named(offline_empty_hf_cache, tmp_path, monkeypatch):
    snap = offline_empty_hf_cache / "models--Org--A" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (offline_empty_hf_cache / "models--Org--A" / "refs").mkdir()
    (offline_empty_hf_cache / "models--Org--A" / "refs" / "main").write_text("a" * 40)
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    p = _write(tmp_path, f'[[model]]\nname = "a"\nspec = "hf:Org/A"\n[[model]]\nname = "b"\nspec = "hf:{local}"\n'
                         '[[model]]\nname = "c"\nspec = "anthropic:claude-x"\n[[model]]\nname = "d"\nspec = "hf:Org/D"\n')
    with pytest.raises(ModelLoadError) as e:
        check_available(load_roster(p))
    msg = str(e.value)
    assert "2 of 4 models" in msg and "c: set ANTHROPIC_API_KEY" in msg and "d: download hf:Org/D" in msg
    assert " a: " not in msg and " b: " not in msg


def test_an_api_entry_whose_host_cannot_be_reached_is_named(tmp_path, monkeypatch):
    import perceptbench.models.roster as roster

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setitem(roster._API, "openai", ("OPENAI_API_KEY", "http://127.0.0.1:1"))  # nothing listens on port 1
    p = _write(tmp_path, '[[model]]\nname = "g"\nspec = "openai:gpt-x"\n[[model]]\nname = "h"\nspec = "openai:gpt-y"\n')
    with pytest.raises(ModelLoadError) as e:
        check_available(load_roster(p))
    msg = str(e.value)
    assert "2 of 2 models" in msg and msg.count("127.0.0.1:1 is not reachable") == 2 and "\n" not in msg
