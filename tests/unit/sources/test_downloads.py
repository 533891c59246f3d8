"""Downloading a file set pinned by commit only (issue 23: the cue-conflict images): a manifest of
the sha256 computed at download, resume after a partial download, one-line errors for a 404 and a
timeout, retries of transient failures, no half file under the final name, a file changed after
download caught.  Against a real local HTTP server (helpers.servers.FileServer)."""

import pytest

from helpers.servers import FileServer
from perceptbench.seeding import file_sha256
from perceptbench.sources.downloads import (MANIFEST_NAME, DownloadError, PinnedFile, download_set, read_manifest,
                                            verify_set)
from perceptbench.sources.fetch import ChecksumError

PNG = b"\x89PNG\r\n\x1a\n"
NAMES = [f"cls{i % 2}/f{i}.png" for i in range(5)]


@pytest.fixture
def origin(tmp_path):
    root = tmp_path / "origin"
    for i, n in enumerate(NAMES):
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_bytes(PNG + bytes([i]) * (100 + i))
    return root


def _files(url):
    return [PinnedFile(n, f"{url}/{n}") for n in NAMES]


def _get(dest, url, **kw):
    kw.setdefault("wait_s", 0)
    return download_set(dest, _files(url), what="test set", hint="HINT", fetch_command="fetch-cmd",
                        check=lambda h: h.startswith(PNG), **kw)


def test_full_fetch_writes_every_file_and_its_sha256_in_the_manifest(origin, tmp_path):
    dest = tmp_path / "dest"
    with FileServer(origin) as srv:
        res = _get(dest, srv.url)
    assert (res.downloaded, res.present) == (5, 0)
    man = read_manifest(dest)
    assert set(man) == set(NAMES)
    for n in NAMES:
        assert (dest / n).read_bytes() == (origin / n).read_bytes()
        assert man[n][0] == file_sha256(origin / n) and man[n][1] == (origin / n).stat().st_size
    assert not list(dest.rglob("*.part"))
    assert "publishes none" in (dest / MANIFEST_NAME).read_text()


def test_a_404_is_named_in_one_line_and_a_rerun_resumes_where_it_stopped(origin, tmp_path):
    dest = tmp_path / "dest"
    with FileServer(origin, faults={NAMES[2]: 404}) as srv:
        with pytest.raises(DownloadError) as e:
            _get(dest, srv.url)
        assert srv.requests.count(NAMES[2]) == 1  # a 404 is not retried
    msg = str(e.value)
    assert "\n" not in msg and NAMES[2] in msg and "HTTP 404" in msg and "2 of 5 files" in msg and "HINT" in msg
    assert set(read_manifest(dest)) == set(NAMES[:2]) and not (dest / NAMES[2]).exists()
    with FileServer(origin) as srv:
        res = _get(dest, srv.url)
        assert srv.requests == NAMES[2:]  # the two finished files are not downloaded again
    assert (res.present, res.downloaded) == (2, 3) and set(read_manifest(dest)) == set(NAMES)


def test_a_timeout_is_retried_then_named_in_one_line(origin, tmp_path):
    dest = tmp_path / "dest"
    with FileServer(origin, faults={NAMES[0]: "hang"}, hang_s=2) as srv:
        with pytest.raises(DownloadError) as e:
            _get(dest, srv.url, timeout=0.3, attempts=2)
        assert srv.requests.count(NAMES[0]) == 2
    msg = str(e.value)
    assert "\n" not in msg and "timed out" in msg and "after 2 tries" in msg and NAMES[0] in msg
    assert not (dest / NAMES[0]).exists() and not list(dest.rglob("*.part"))


def test_transient_failures_are_retried_and_a_truncated_body_never_becomes_the_file(origin, tmp_path):
    dest = tmp_path / "dest"
    with FileServer(origin, faults={NAMES[1]: (503, 1), NAMES[3]: ("truncate", 1)}) as srv:
        res = _get(dest, srv.url, attempts=3)
        assert srv.requests.count(NAMES[1]) == 2 and srv.requests.count(NAMES[3]) == 2
    assert res.downloaded == 5
    assert (dest / NAMES[3]).read_bytes() == (origin / NAMES[3]).read_bytes()


def test_a_file_changed_after_download_is_caught_against_the_manifest(origin, tmp_path):
    dest = tmp_path / "dest"
    with FileServer(origin) as srv:
        _get(dest, srv.url)
        (dest / NAMES[4]).write_bytes(PNG + b"tampered")
        with pytest.raises(ChecksumError) as e:
            _get(dest, srv.url)
    msg = str(e.value)
    assert "\n" not in msg and NAMES[4] in msg and read_manifest(dest)[NAMES[4]][0] in msg
    assert MANIFEST_NAME in msg and "fetch-cmd" in msg
    with pytest.raises(ChecksumError):
        verify_set(dest, NAMES, fetch_command="fetch-cmd")


def test_a_file_without_its_manifest_line_is_downloaded_again_and_a_torn_line_ignored(origin, tmp_path):
    dest = tmp_path / "dest"
    with FileServer(origin) as srv:
        _get(dest, srv.url)
        man = dest / MANIFEST_NAME
        lines = man.read_text().splitlines(keepends=True)
        # a crash after the rename of the last file, while its manifest line was being written
        man.write_text("".join(lines[:-1]) + lines[-1][:20])
        (dest / NAMES[4]).write_bytes(b"half")
        srv.requests.clear()
        res = _get(dest, srv.url)
        assert srv.requests == [NAMES[4]]
    assert (res.present, res.downloaded) == (4, 1)
    assert (dest / NAMES[4]).read_bytes() == (origin / NAMES[4]).read_bytes()


def test_bytes_that_are_not_the_expected_file_type_are_refused_not_kept(origin, tmp_path):
    (origin / NAMES[0]).write_bytes(b"<html>rate limited</html>")
    with FileServer(origin) as srv, pytest.raises(DownloadError, match="not the expected file type"):
        _get(tmp_path / "dest", srv.url)
    assert not (tmp_path / "dest" / NAMES[0]).exists()
