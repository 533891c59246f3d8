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

    Every file of the named sources; default: all sources."""
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
    except (SourceError, KeyError) as e:
        fail(e)


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
    if bad:
        raise typer.Exit(1)
