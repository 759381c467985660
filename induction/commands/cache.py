"""``induction cache``: show and clear the workbench's caches (docs/safety.md).

Only the entries named in :data:`induction.store.fingerprint.CACHE_KINDS` are counted or deleted;
anything else under the cache root is left alone.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import typer

from induction.errors import InputError

cache_app = typer.Typer(
    help="Show the cache root and what it holds; `induction cache clear --yes` empties it.",
    invoke_without_command=True,
)


def _size(path: Path) -> tuple[int, int]:
    """(bytes, entries) of a cache kind: a file is one entry, a folder counts its children."""
    if path.is_file():
        return path.stat().st_size, 1
    if not path.is_dir():
        return 0, 0
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return total, sum(1 for p in path.iterdir() if not p.name.startswith("."))


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


@cache_app.callback()
def show(ctx: typer.Context) -> None:
    """Show the cache root ($INDUCTION_CACHE, default ~/.cache/induction-workbench), the size
    and number of entries of each kind."""
    if ctx.invoked_subcommand is not None:
        return
    from induction.store.fingerprint import CACHE_KINDS, cache_root

    root = cache_root()
    typer.echo(f"cache root: {root}{'' if root.exists() else ' (does not exist yet)'}")
    total = 0
    for name, what in CACHE_KINDS.items():
        size, entries = _size(root / name)
        total += size
        noun = "entry" if entries == 1 else "entries"
        typer.echo(f"  {name:<17} {_human(size):>10}  {entries:>5} {noun:<7}  {what}")
    typer.echo(f"  {'total':<17} {_human(total):>10}")


@cache_app.command("clear")
def clear(
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete every cache kind under the cache root (nothing else there is touched)."""
    from induction.store.fingerprint import CACHE_KINDS, cache_root

    root = cache_root()
    present = [root / name for name in CACHE_KINDS if (root / name).exists()]
    if not present:
        typer.echo(f"nothing to clear under {root}")
        return
    size = sum(_size(p)[0] for p in present)
    if not yes:
        if not sys.stdin.isatty():
            raise InputError(
                f"would delete {_human(size)} of caches under {root}; pass --yes to delete"
            )
        typer.confirm(f"delete {_human(size)} of caches under {root}?", abort=True)
    for p in present:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    typer.echo(f"cleared {_human(size)} under {root} ({', '.join(p.name for p in present)})")
