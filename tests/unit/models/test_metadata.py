"""The declared model taxonomy (issue 22 item 1): schema validation, the inline
``SHORT[KEY=VALUE,...]=SPEC`` form, and the families the VSI means read."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from perceptbench.models.metadata import (FAMILIES, ModelMeta, declared_families, format_params, models_table_rows,
                                          parse_params, split_inline_meta)
from perceptbench.models.registry import parse_model_arg, parse_model_meta


@pytest.mark.parametrize("value, count", [("7B", 7 * 10 ** 9), ("1.5B", 15 * 10 ** 8), ("86M", 86 * 10 ** 6),
                                          ("256m", 256 * 10 ** 6), (86_000_000, 86_000_000), (None, None)])
def test_params_read_with_suffixes(value, count):
    assert parse_params(value) == count


@pytest.mark.parametrize("value", ["seven", "7X", "-3B", "0", True, 1.5, ""])
def test_bad_params_are_refused(value):
    with pytest.raises(ValueError, match="parameter count"):
        parse_params(value)


def test_params_formatted_back():
    assert [format_params(n) for n in (7 * 10 ** 9, 15 * 10 ** 8, 86 * 10 ** 6, None)] == ["7B", "1.5B", "86M", ""]


def test_family_vocabulary_is_enforced():
    for fam in FAMILIES:
        assert ModelMeta(family=fam).family == fam
    with pytest.raises(ValidationError):
        ModelMeta(family="vlm")  # the record's back-end kind, not a declared family
    with pytest.raises(ValidationError):
        ModelMeta(colour="red")  # unknown field


def test_access_must_agree_with_an_open_or_closed_family():
    with pytest.raises(ValidationError, match="contradicts"):
        ModelMeta(family="closed-vlm", access="open")
    assert ModelMeta(family="closed-vlm").access_or_implied == "closed"
    assert ModelMeta(family="open-vlm").access_or_implied == "open"
    assert ModelMeta(family="ssl", access="open").access == "open"


def test_architecture_is_a_lower_case_slug():
    with pytest.raises(ValidationError):
        ModelMeta(architecture="Qwen VL")
    assert ModelMeta(architecture="qwen-vl").architecture == "qwen-vl"


def test_inline_metadata_is_split_from_the_spec():
    arg = "qwen[family=open-vlm, params=7B,architecture=qwen-vl,vision_tower=Qwen2-VL ViT]=hf:Qwen/Qwen2-VL-7B-Instruct@abc"
    plain, meta = split_inline_meta(arg)
    assert plain == "qwen=hf:Qwen/Qwen2-VL-7B-Instruct@abc"
    assert meta == ModelMeta(family="open-vlm", params="7B", architecture="qwen-vl", vision_tower="Qwen2-VL ViT")
    name, spec = parse_model_arg(arg)  # the metadata never reaches the name or the spec
    assert name == "qwen" and (spec.kind, spec.ref) == ("hf", "Qwen/Qwen2-VL-7B-Instruct@abc")
    assert parse_model_meta("qwen=hf:Qwen/Qwen2-VL-7B-Instruct") is None
    assert split_inline_meta("hf:/local/dir") == ("hf:/local/dir", None)


@pytest.mark.parametrize("arg, words", [
    ("q[family=vlm]=hf:x/y", ("'vlm' is not a family", "open-vlm")),
    ("q[colour=red]=hf:x/y", ("colour", "unknown field")),
    ("q[params=seven]=hf:x/y", ("params", "not a parameter count")),
    ("q[family]=hf:x/y", ("'family' is not KEY=VALUE",)),
    ("q[family=ssl,family=mim]=hf:x/y", ("family given twice",)),
])
def test_bad_inline_metadata_is_one_line_naming_the_argument_and_field(arg, words):
    with pytest.raises(ValueError) as e:
        parse_model_meta(arg)
    msg = str(e.value)
    assert "\n" not in msg and arg in msg and all(w in msg for w in words), msg


def test_declared_families_prefer_the_architecture_line():
    models = {"a": {"family": "open-vlm", "architecture": "qwen-vl"}, "b": {"family": "open-vlm"},
              "c": {"family": None, "architecture": None}, "d": "not an object"}
    assert declared_families(models) == {"a": "qwen-vl", "b": "open-vlm"}
    assert declared_families(None) == {}


def test_models_table_rows_sorted_with_empty_cells():
    rows = models_table_rows({"z": {"spec": "hf:o/z", "family": "ssl", "params": 86000000}, "a": {"spec": "x"}})
    assert [r[0] for r in rows] == ["a", "z"]
    assert rows[1][:2] == ["z", "hf:o/z"] and "86000000" in rows[1] and "ssl" in rows[1] and rows[0][2] == ""
