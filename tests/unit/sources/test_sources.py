import shutil

import pytest

from perceptbench.sources import ChecksumError, MissingSourceError, SOURCES, get_source, resolve

from helpers.cli import cli


def test_every_registered_file_verifies_in_the_mirror(mirror):
    n = 0
    for s in SOURCES.values():
        assert s.citation and s.license and (s.files or s.hub_dataset)
        for f in s.files:
            assert f.url.startswith("https://") and len(f.sha256) == 64
            resolve(f)
            n += 1
    assert n > 180


def test_checksum_mismatch_names_file_and_both_hashes(tmp_path, monkeypatch, mirror):
    sf = get_source("demiralp2014-kernels").files[0]
    bad = tmp_path / sf.path
    bad.parent.mkdir(parents=True)
    shutil.copy(mirror / sf.path, bad)
    bad.write_bytes(bad.read_bytes() + b"0")
    monkeypatch.setenv("PERCEPTBENCH_MIRROR", str(tmp_path))
    with pytest.raises(ChecksumError) as e:
        resolve(sf)
    msg = str(e.value)
    assert str(bad) in msg and sf.sha256 in msg and "got" in msg
    # mirror mode never downloads: the remedy must not be "delete the file to re-download"
    assert "Delete the file" not in msg and "re-download" not in msg and "replace the file" in msg and sf.url in msg


def test_checksum_mismatch_in_cache_says_delete_and_fetch(tmp_path, monkeypatch, mirror):
    sf = get_source("demiralp2014-kernels").files[0]
    monkeypatch.delenv("PERCEPTBENCH_MIRROR")
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path))
    bad = tmp_path / sf.path
    bad.parent.mkdir(parents=True)
    bad.write_bytes((mirror / sf.path).read_bytes() + b"0")
    with pytest.raises(ChecksumError, match="Delete the file and run `perceptbench sources fetch`"):
        resolve(sf, download=False)


def test_missing_mirror_directory_is_named(tmp_path, monkeypatch):
    sf = get_source("demiralp2014-kernels").files[0]
    monkeypatch.setenv("PERCEPTBENCH_MIRROR", str(tmp_path / "nowhere"))
    with pytest.raises(MissingSourceError, match="nowhere: the mirror directory does not exist"):
        resolve(sf)


def test_sources_verify_and_fetch_name_a_missing_mirror(tmp_path):
    env = {"PERCEPTBENCH_MIRROR": str(tmp_path / "nowhere")}
    for cmd in (["verify"], ["fetch"]):
        p = cli("sources", *cmd, env=env, columns=300)
        assert p.returncode != 0 and "the mirror directory does not exist" in p.stderr, p.stdout + p.stderr
        assert "sources fetch" not in p.stderr.split("does not exist")[1]


def test_missing_source_says_how_to_fetch(tmp_path, monkeypatch):
    sf = get_source("demiralp2014-kernels").files[0]
    monkeypatch.setenv("PERCEPTBENCH_MIRROR", str(tmp_path))
    with pytest.raises(MissingSourceError, match="not in the mirror"):
        resolve(sf)
    monkeypatch.delenv("PERCEPTBENCH_MIRROR")
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(MissingSourceError, match="perceptbench sources fetch"):
        resolve(sf, download=False)


def test_cache_hit_is_verified(tmp_path, monkeypatch, mirror):
    sf = get_source("demiralp2014-kernels").files[0]
    monkeypatch.delenv("PERCEPTBENCH_MIRROR")
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path))
    dest = tmp_path / sf.path
    dest.parent.mkdir(parents=True)
    shutil.copy(mirror / sf.path, dest)
    assert resolve(sf, download=False) == dest


def test_external_benchmark_sources_are_registered():
    pope = get_source("li2023-pope")
    assert "pope/output/coco/coco_pope_adversarial.json" in {f.path for f in pope.files}
    assert all(f.url.startswith("https://raw.githubusercontent.com/AoiDragon/POPE/08d957b") for f in pope.files)
    hb = get_source("guan2024-hallusionbench")
    assert {f.path for f in hb.files} == {"hallusionbench/HallusionBench.json", "hallusionbench/LICENSE.md"}
    assert get_source("tong2024-mmvp").hub_dataset == "lmms-lab-eval/MMVP"
    mmstar = get_source("chen2024-mmstar")
    assert mmstar.hub_dataset == "Lin-Chen/MMStar" and len(mmstar.hub_revision) == 40 and not mmstar.files
