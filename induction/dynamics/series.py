"""The checkpoint series a model ships, and the one line that says how to sweep it.

A fixed-protocol run folder holds its series under ``checkpoints/step-N`` (and
``step-N-pre`` before a growth event); the seed-0 zoo models ship theirs that way
(docs/zoo.md). ``induction sweep`` takes such a folder *by path* as the whole series, and a
zoo *name* (``lidas8-s0``) as its final model only (:func:`induction.dynamics.sweep.discover`).
When a
name's folder ships a series, :func:`series_hint` gives the command that sweeps it;
``induction sweep`` prints it before sweeping and ``induction timeline`` when the dataset
holds a single checkpoint.

Nothing here imports torch.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from induction.errors import WorkbenchError

#: A checkpoint folder of a run: ``step-N`` or ``step-N-pre`` (as :mod:`induction.dynamics.sweep`).
STEP = re.compile(r"^step-(\d+)(-pre)?$")


def is_run_folder(source: str | Path) -> bool:
    """Whether ``induction sweep`` takes ``source`` as a run (a folder with ``checkpoints/``)."""
    path = Path(source).expanduser()
    return path.is_dir() and (path / "checkpoints").is_dir()


def shipped_series(spec: str | Path) -> tuple[Path, int] | None:
    """``(run folder, checkpoints)`` when ``spec`` resolves to a model folder with a
    checkpoint series (``checkpoints/step-*`` holding a config.json); None otherwise,
    including specs that do not resolve."""
    from induction.models.specs import resolve_spec

    try:
        folder = resolve_spec(str(spec)).folder
    except (WorkbenchError, OSError):
        return None
    if folder is None or not (folder / "checkpoints").is_dir():
        return None
    try:
        n = sum(
            1
            for p in (folder / "checkpoints").iterdir()
            if STEP.match(p.name) and (p / "config.json").is_file()
        )
    except OSError:
        return None
    return (folder, n) if n else None


def shown(folder: Path) -> str:
    """``folder`` as a shell word: relative to the working directory when inside it."""
    try:
        text = str(folder.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        text = str(folder.resolve())
    return shlex.quote(text)


def sweep_command(folder: Path, out: str = "DIR") -> str:
    """The command that sweeps the series of the run ``folder`` into ``out``."""
    return f"induction sweep {shown(folder)} --out {out}"


def series_hint(spec: str | Path) -> str | None:
    """One line for a spec that ships a checkpoint series but is not named by its folder
    (so a sweep scores only its final model): how to sweep the series. None otherwise."""
    if is_run_folder(spec):
        return None
    found = shipped_series(spec)
    if found is None:
        return None
    folder, n = found
    return (
        f"{spec} ships a series of {n} checkpoint{'' if n == 1 else 's'}, but a model name "
        f"sweeps only its final model; to sweep the series: {sweep_command(folder)}"
    )
