"""The one way the tests run the command line: :func:`cli`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Literal

#: Exit status of :func:`cli` under ``torch="unimported"`` / ``"blocked"`` when the command
#: imported torch (it also says so on stderr).
TORCH_IMPORTED = 97

# The command run inside ``python -c``: the app on argv[1:]; with BLOCK set, `import torch`
# raises ImportError (a hook, not a None entry in sys.modules: that breaks scipy's array-API
# probe).  The command's own exit status is passed on, unless it imported torch.
_DRIVER = """\
import sys
BLOCK = {block}
if BLOCK:
    class _NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] == 'torch':
                raise ImportError('torch is blocked in this test')
    sys.meta_path.insert(0, _NoTorch())
from perceptbench.cli import app
try:
    app(sys.argv[1:], prog_name='perceptbench')
    code = 0
except SystemExit as e:
    code = e.code
if 'torch' in sys.modules:
    print('perceptbench ' + ' '.join(sys.argv[1:]) + ' imported torch', file=sys.stderr)
    sys.exit({torch_imported})
sys.exit(code)
"""


def cli(*args: object, env: Mapping[str, str | None] | None = None, cwd: os.PathLike | str | None = None,
        columns: int | None = 200, torch: Literal["any", "unimported", "blocked"] = "any",
        in_process: bool = False, background: bool = False,
        **popen: object) -> subprocess.CompletedProcess | subprocess.Popen:
    """Run ``perceptbench ARGS`` as a user does and return its result.

    By default the command runs in a child Python (``python -m perceptbench.cli ARGS``, this
    interpreter, this process's environment) and the result is a
    :class:`subprocess.CompletedProcess` with text ``stdout`` / ``stderr``.

    - ``args``: the command line after ``perceptbench``; each is passed through ``str``
      (paths may be given as they are).
    - ``env``: variables set (a string) or removed (``None``) on top of this process's environment.
    - ``columns``: ``COLUMNS``, the console width rich wraps at (``None``: left as inherited).
    - ``torch``: ``"unimported"`` runs the app inside ``python -c`` and exits with
      :data:`TORCH_IMPORTED` (naming the command on stderr) when the command imported torch;
      ``"blocked"`` also makes ``import torch`` raise ImportError in the child.
    - ``in_process``: run the app in this process through typer's ``CliRunner`` (faster; ``env``
      and ``columns`` are set while it runs).  The result is a ``CompletedProcess`` with the
      runner's ``stdout`` and ``stderr``, kept apart as a child's are.
    - ``background``: start the child and return its :class:`subprocess.Popen` at once (its
      output goes where ``popen`` sends it, to DEVNULL by default); the caller waits or kills it.
    - ``popen``: further keyword arguments of :func:`subprocess.run` / :class:`subprocess.Popen`
      (``timeout``, ``preexec_fn``, ``stdout``...).

    Raises ValueError for an unknown ``torch`` mode or for ``in_process`` combined with
    ``torch``, ``background`` or ``cwd``."""
    argv = [str(a) for a in args]
    full_env = dict(os.environ)
    if columns is not None:
        full_env["COLUMNS"] = str(columns)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    if in_process:
        if torch != "any" or background or cwd is not None:
            raise ValueError("in_process runs the app as it is: no torch mode, background or cwd")
        from typer.testing import CliRunner

        from perceptbench.cli import app

        changes = {k: full_env.get(k) for k in set(full_env) | set(os.environ) if full_env.get(k) != os.environ.get(k)}
        res = CliRunner(env=changes).invoke(app, argv)
        return subprocess.CompletedProcess(["perceptbench", *argv], res.exit_code, res.stdout, res.stderr)
    if torch == "any":
        cmd = [sys.executable, "-m", "perceptbench.cli", *argv]
    elif torch in ("unimported", "blocked"):
        code = _DRIVER.format(block=torch == "blocked", torch_imported=TORCH_IMPORTED)
        cmd = [sys.executable, "-c", code, *argv]
    else:
        raise ValueError(f"torch={torch!r}: expected 'any', 'unimported' or 'blocked'")
    if background:
        popen.setdefault("stdout", subprocess.DEVNULL)
        popen.setdefault("stderr", subprocess.DEVNULL)
        return subprocess.Popen(cmd, env=full_env, cwd=cwd, **popen)
    popen.setdefault("capture_output", True)
    return subprocess.run(cmd, text=True, env=full_env, cwd=cwd, **popen)


def one_line_error(p: subprocess.CompletedProcess, *needles: str) -> None:
    """Assert that the command ``p`` refused with exit status 2 and one ``error:`` message on standard
    error (wrapping undone) containing every needle, none on standard output, without a traceback."""
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "error:" not in p.stdout, p.stdout
    err = " ".join(p.stderr.split())
    assert err.startswith("error:") and err.count("error:") == 1 and all(n in err for n in needles), err
