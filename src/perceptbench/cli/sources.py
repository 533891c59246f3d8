"""``perceptbench sources list|fetch|verify``: the human-data releases."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from .errors import console, fail


app = typer.Typer(no_args_is_help=True, help="Human-data sources: list, fetch, verify.")


@app.command("list")
def sources_list() -> None:
    """List the registered human-data releases."""
    from ..sources import SOURCES

    t = Table(title="sources")
    for c in ("id", "files", "MB", "license", "citation"):
        t.add_column(c, overflow="fold")
    for s in SOURCES.values():
        files = str(len(s.files)) if s.files or not s.hub_dataset else f"hub:{s.hub_dataset}"
        t.add_row(s.id, files, f"{sum(f.size for f in s.files) / 1e6:.1f}", s.license, s.citation)
    console.print(t)


@app.command("fetch")
def sources_fetch(source: Optional[List[str]] = typer.Argument(None)) -> None:
    """Download (or verify in the mirror) the given sources' files.

    Every file of the named sources; default: all sources.  Naming geirhos2019-cue-conflict also
    downloads its 1,280 images (133 MB, not in the mirror) into the cache and records their sha256
    in a manifest beside them; with no source named they are not downloaded (a line says how)."""
    from ..sources import SOURCES, SourceError, fetch_source, get_source

    import os

    from ..sources.fetch import MIRROR_ENV, cache_dir

    where = f"in the mirror {os.environ[MIRROR_ENV]} (nothing copied)" if os.environ.get(MIRROR_ENV) \
        else f"in the cache {cache_dir()}"
    try:
        for sid in source or list(SOURCES):
            src = get_source(sid)
            if src.hub_dataset and not src.files:
                console.print(f"{sid}: hub dataset {src.hub_dataset}"
                              f"{'@' + src.hub_revision[:7] if src.hub_revision else ''}, read by the `datasets` "
                              "library on first use (pip install 'perceptbench[external]'); nothing to fetch here",
                              markup=False)
                continue
            paths = fetch_source(src)
            console.print(f"{sid}: {len(paths)} files present and verified {where}")
            if sid == CUE_CONFLICT:
                if source:
                    _fetch_cue_conflict_images()
                else:
                    console.print(f"{sid}: its 1,280 images (133 MB) are not fetched without naming the source: "
                                  f"`perceptbench sources fetch {sid}`", markup=False, highlight=False)
    except (SourceError, KeyError) as e:
        fail(e)
    except OSError as e:
        fail(f"cannot write the download: {e}")


CUE_CONFLICT = "geirhos2019-cue-conflict"
"""The source whose images are downloaded beside its pinned files (not in the manifest or mirror)."""


def _fetch_cue_conflict_images() -> None:
    """Download the cue-conflict images (:meth:`CueConflictExperiment.fetch_images`) with a progress bar."""
    from rich.progress import Progress

    from ..sources.downloads import MANIFEST_NAME
    from ..stimuli.cue_conflict import EXPERIMENT, default_images_dir

    n = len(EXPERIMENT.release_images())
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(f"{CUE_CONFLICT} images", total=n)
        res = EXPERIMENT.fetch_images(progress=lambda k: bar.advance(task, k))
    root = default_images_dir()
    console.print(f"{CUE_CONFLICT}: {res.present + res.downloaded} of {n} images present in {root} "
                  f"({res.downloaded} downloaded now, {res.present} already there and verified); their sha256, "
                  f"computed at download (the release publishes none), are in {root / MANIFEST_NAME} and checked "
                  "on every later run", markup=False, highlight=False)


@app.command("verify")
def sources_verify(source: Optional[List[str]] = typer.Argument(None)) -> None:
    """Check the sha256 of every file present; downloads nothing.

    Files in the mirror (PERCEPTBENCH_MIRROR) or else in the cache."""
    from ..sources import SOURCES, SourceError, get_source, resolve

    import os

    from ..sources.fetch import MIRROR_ENV, ChecksumError, cache_dir

    mirror = os.environ.get(MIRROR_ENV)
    if mirror and not Path(mirror).is_dir():
        fail(f"{MIRROR_ENV}={mirror}: the mirror directory does not exist. Point {MIRROR_ENV} at the data "
              f"mirror, or unset it to use the download cache {cache_dir()}.")
    where = f"mirror {mirror}" if mirror else f"cache {cache_dir()}"
    bad = 0
    for sid in source or list(SOURCES):
        files = get_source(sid).files
        if not files and get_source(sid).hub_dataset:
            console.print(f"{sid}: hub dataset {get_source(sid).hub_dataset}, no pinned files to verify")
            continue
        ok = missing = 0
        for sf in files:
            try:
                resolve(sf, download=False)
                ok += 1
            except ChecksumError as e:
                bad += 1
                console.print(f"[red]{e}[/red]", highlight=False)
            except SourceError:
                missing += 1
        bad += missing
        console.print(f"{sid}: {ok}/{len(files)} present and verified in the {where}"
                      + (f"; {missing} missing (run `perceptbench sources fetch {sid}`)" if missing else ""))
        if sid == CUE_CONFLICT:
            bad += _verify_cue_conflict_images()
    if bad:
        raise typer.Exit(1)


def _verify_cue_conflict_images() -> int:
    """Check the downloaded cue-conflict images against their manifest; returns the number of
    problems (0 when they were never fetched: then a line says how)."""
    from ..sources.downloads import MANIFEST_NAME, verify_set
    from ..sources.fetch import ChecksumError
    from ..stimuli.cue_conflict import EXPERIMENT, FETCH_COMMAND

    root, listed, n = EXPERIMENT.fetched()
    if not (root / MANIFEST_NAME).is_file():
        console.print(f"{CUE_CONFLICT}: images not fetched (none in {root}); `{FETCH_COMMAND}` downloads them",
                      markup=False, highlight=False)
        return 0
    try:
        ok, missing = verify_set(root, [i.relpath for i in EXPERIMENT.release_images()], fetch_command=FETCH_COMMAND)
    except ChecksumError as e:
        console.print(f"[red]{e}[/red]", highlight=False)
        return 1
    console.print(f"{CUE_CONFLICT}: {len(ok)}/{n} images verified against {root / MANIFEST_NAME}"
                  + (f"; {len(missing)} missing (run `{FETCH_COMMAND}`)" if missing else ""),
                  markup=False, highlight=False)
    return len(missing)
