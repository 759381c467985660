"""Output files: atomic writes, claimed outputs, input protection, table formats by suffix.

Every writer goes through :func:`atomic_write`: the data is written to a temporary file in
the destination folder, flushed, and moved over the destination with ``os.replace``. A reader
never sees a half-written file, and a failed write leaves the old file (or nothing) in place.

The guarantees of docs/safety.md are built here, once, for every command:

- :func:`check_outputs` refuses an output that is (or lies inside, or contains) a file or
  folder the command reads; :func:`model_inputs` lists what a model spec reads.
- :func:`claim_output` holds an exclusive lock (``fcntl.flock``; ``msvcrt.locking`` on Windows)
  on ``.NAME.lock`` beside the output for the whole run, so two runs never write one output
  (the second fails at once, naming the first one's pid); the kernel drops the lock when its
  process dies, even by SIGKILL. On claiming, temporaries that a killed run left
  (``.NAME.XXXXXXXX.tmp``, ``.NAME.old.XXXXXXXX``) are removed, or put back when they hold
  the only copy, and stderr says so.
- :func:`wrote` says ``replaced X`` or ``wrote X``.
- :func:`check_output_size` refuses an output larger than the free disk space, and one that
  would fill more than :data:`FREE_SHARE` of it (or exceed an explicit size limit) unless the
  user confirmed it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from induction.errors import InputError

TABLE_SUFFIXES = (".csv", ".parquet", ".json", ".jsonl")
#: An explicit size limit (bytes) above which outputs need a yes (``--yes``); None: no fixed
#: limit (a 7B model is 14 GB; mergekit users do not expect a prompt for it).
#: ``$INDUCTION_LARGE_OUTPUT`` (bytes) sets one.
LARGE_OUTPUT_BYTES: int | None = None
#: Outputs that would take more than this share of the disk's free space need a yes.
FREE_SHARE = 0.5

_held: dict[str, list] = {}  # lock path -> [thread id, depth, fd]
_held_guard = threading.Lock()
_replaced: dict[str, bool] = {}  # resolved output -> whether the last write replaced a file


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it over ``path``.

    For writers that want a file name (``df.to_parquet(tmp)``, ``fig.write_html(tmp)``).
    On an exception the temporary file is removed and ``path`` is left untouched. The output
    is claimed (:func:`claim_output`) for the write unless this thread already holds it.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"output {path} is a folder; pass a file path")
    with claim_output(path):
        with _atomic_tmp(path) as tmp:
            yield tmp
            existed = path.exists()
            os.chmod(tmp, 0o644)
        _replaced[str(path.resolve())] = existed


@contextmanager
def _atomic_tmp(path: Path) -> Iterator[Path]:
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        full = disk_full(e, path)
        if full is not None:
            raise full from None
        raise


#: Messages of writers that report a full disk without an OSError (safetensors' Rust IoError).
_FULL_DISK_TEXT = ("no space left on device", "storagefull", "code: 28,", "disk quota exceeded")


def disk_full(e: BaseException, path: str | Path) -> OSError | None:
    """``e`` as an ``OSError(ENOSPC)`` naming ``path`` when it says the disk (or quota) is
    full, so the CLI's one line names where (docs/safety.md); None for any other error."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return OSError(e.errno, e.strerror or os.strerror(e.errno), str(e.filename or path))
    if not isinstance(e, OSError) and any(t in str(e).lower() for t in _FULL_DISK_TEXT):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    return None


def replace_file(path: str | Path, text: str) -> None:
    """Atomically replace a private file (a cache index) without claiming it: concurrent
    writers may lose each other's update, never corrupt the file."""
    path = Path(path)
    with _atomic_tmp(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def wrote(path: str | Path) -> str:
    """``replaced PATH`` if the last write to ``path`` in this process replaced a file, else
    ``wrote PATH``."""
    return f"{'replaced' if _replaced.get(str(Path(path).resolve())) else 'wrote'} {path}"


def note_written(path: str | Path, replaced: bool) -> None:
    """Record a write made without :func:`atomic_path` (a folder output) for :func:`wrote`."""
    _replaced[str(Path(path).resolve())] = replaced


# --------------------------------------------------------------------------- claims


def lock_path(path: str | Path) -> Path:
    """The lock file that claims ``path``: ``.NAME.lock`` beside it."""
    path = Path(path).expanduser().absolute()
    return path.parent / f".{path.name}.lock"


@contextmanager
def claim_output(path: str | Path, *, clean: bool = True) -> Iterator[Path]:
    """Hold an exclusive claim on output ``path`` (file or folder) until the block ends.

    Raises InputError at once if another run (or thread) holds it. Re-entrant within one
    thread. On first claim, stale temporaries of ``path`` left by killed runs are cleaned
    (:func:`clean_stale`) unless ``clean`` is false.
    """
    path = Path(path).expanduser()
    lock = lock_path(path)
    key = str(lock)
    me = threading.get_ident()
    with _held_guard:
        entry = _held.get(key)
        if entry is not None:
            if entry[0] != me:
                raise _busy(path, "another thread of this process")
            entry[1] += 1
            fd = None
        else:
            fd = _acquire(lock, path)
            _held[key] = [me, 1, fd]
    try:
        if fd is not None and clean:
            clean_stale(path)
        yield path
    finally:
        with _held_guard:
            entry = _held[key]
            entry[1] -= 1
            if entry[1] == 0:
                del _held[key]
                try:
                    lock.unlink()
                except OSError:
                    pass
                os.close(entry[2])


@contextmanager
def claim_outputs(paths: Iterable[str | Path | None]) -> Iterator[None]:
    """:func:`claim_output` for every path that is not None."""
    with ExitStack() as stack:
        for p in paths:
            if p is not None:
                stack.enter_context(claim_output(p))
        yield


def _busy(path: Path, who: str) -> InputError:
    return InputError(
        f"{path} is being written by {who}; wait for it to finish or choose another output path"
    )


def _try_lock(fd: int) -> bool:
    """Take an exclusive, non-blocking lock on open file ``fd``: ``fcntl.flock`` on POSIX,
    ``msvcrt.locking`` on Windows; False when another process holds it. The system drops
    it when the holder dies, even by SIGKILL."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _acquire(lock: Path, path: Path) -> int:
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise InputError(
                f"cannot write {path}: {e.strerror or e} in {lock.parent}; "
                "choose a writable output folder"
            ) from None
        if not _try_lock(fd):
            try:
                pid = os.read(fd, 32).decode().strip()
            except OSError:
                pid = ""
            os.close(fd)
            raise _busy(path, f"another run (pid {pid})" if pid.isdigit() else "another run")
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:  # the holder removed it between our open and lock
            same = False
        if same:
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            except OSError as e:  # a full disk: leave no stale lock behind
                os.close(fd)
                lock.unlink(missing_ok=True)
                raise InputError(
                    f"cannot write {path}: {e.strerror or e} in {lock.parent}; "
                    "free some space or choose another output folder"
                ) from None
            return fd
        os.close(fd)


def _stale_pattern(name: str) -> re.Pattern:
    return re.compile(rf"^\.{re.escape(name)}\.(?:[a-z0-9_]{{8}}\.tmp|old\.[a-z0-9_]{{8}})$")


def clean_stale(path: str | Path) -> list[Path]:
    """Remove temporaries of ``path`` that a killed run left; the caller holds the claim.

    ``.NAME.XXXXXXXX.tmp`` (a file or folder being written) is deleted. ``.NAME.old.XXXXXXXX``
    (the previous folder, set aside while the new one moved in) is put back as ``NAME`` if
    ``NAME`` is missing (the run died between the two renames), else deleted. Each action is
    reported on stderr. Returns the paths handled.
    """
    path = Path(path).expanduser()
    folder = path.parent
    if not folder.is_dir():
        return []
    pattern = _stale_pattern(path.name)
    handled = []
    for entry in sorted(folder.iterdir()):
        if not pattern.match(entry.name):
            continue
        kept = entry / "x"  # write_restacked's layout: the previous output inside
        if ".old." in entry.name and kept.exists() and not path.exists():
            os.replace(kept, path)
            shutil.rmtree(entry, ignore_errors=True)
            print(
                f"note: restored {path} from an interrupted replace ({entry.name})", file=sys.stderr
            )
        else:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            print(
                f"note: removed {entry.name}, a temporary of {path.name} left by an "
                "interrupted run",
                file=sys.stderr,
            )
        handled.append(entry)
    return handled


def check_outputs(
    outputs: Mapping[str, str | Path | Iterable[str | Path] | None],
    inputs: Iterable[str | Path | None],
) -> None:
    """Refuse (one-line InputError) any output that would write over something the command
    reads, before any work is done.

    ``outputs`` maps a flag (``--out``) to a path, a list of paths or None; ``inputs`` are files
    and folders read (a folder protects every file inside it). Links and ``..`` are resolved and
    hard links compared by inode. An output may not be an input, lie inside an input folder, or
    contain an input (a folder output is replaced whole). Two outputs may not be the same file.
    """
    flat: list[tuple[str, Path]] = []
    for flag, value in outputs.items():
        if value is None:
            continue
        values = [value] if isinstance(value, str | os.PathLike) else list(value)
        flat += [(flag, Path(v).expanduser()) for v in values if v is not None]
    ins = [(Path(i).expanduser(), Path(i).expanduser().resolve()) for i in inputs if i is not None]
    seen: dict[Path, str] = {}
    for flag, out in flat:
        out_r = out.resolve()
        if out_r in seen:
            raise InputError(f"{seen[out_r]} and {flag} must be different files (both {out})")
        seen[out_r] = flag
        for inp, in_r in ins:
            why = None
            if out_r == in_r or _same_file(out_r, in_r):
                why = f"it is an input ({inp})"
            elif in_r in out_r.parents:
                why = f"it is inside {inp}, which is an input"
            elif out_r in in_r.parents:
                why = f"it contains {inp}, which is an input"
            if why:
                raise InputError(
                    f"refusing to write {flag} {out}: {why}; choose another {flag} path"
                )


def guards_inputs(method: Callable) -> Callable:
    """Decorator for a result's public writer (``save``, ``plot``): before the method runs,
    its ``path`` (or ``folder``) argument is refused by :func:`check_outputs` when it is, lies
    inside or contains one of ``self.inputs``, the files and folders the result was computed
    from (docs/safety.md). Every public ``save`` in induction/, lineage/ and ablation/ goes
    through it (tests/test_bad_inputs_4_outputs.py enumerates them)."""
    import functools
    import inspect

    sig = inspect.signature(method)
    arg = next(a for a in ("path", "folder") if a in sig.parameters)

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        target = sig.bind(self, *args, **kwargs).arguments.get(arg)
        if target is not None:
            label = f"{type(self).__name__}.{method.__name__}"
            check_outputs({label: target}, getattr(self, "inputs", None) or ())
        return method(self, *args, **kwargs)

    guarded.guards_inputs = True  # type: ignore[attr-defined]
    return guarded


def prepare_outputs(
    outputs: Mapping[str, str | Path | Iterable[str | Path] | None],
    inputs: Iterable[str | Path | None],
) -> None:
    """Before any work: :func:`check_outputs`, then claim and release every output once, so a
    run that another run is writing to fails now, and stale temporaries are cleaned."""
    check_outputs(outputs, inputs)
    paths = []
    for value in outputs.values():
        if value is not None:
            paths += [value] if isinstance(value, str | os.PathLike) else list(value)
    with claim_outputs(paths):
        pass


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.is_file() and b.is_file() and os.path.samefile(a, b)
    except OSError:
        return False


# --------------------------------------------------------------------------- sizes


def large_output_bytes() -> int | None:
    """:data:`LARGE_OUTPUT_BYTES`, or ``$INDUCTION_LARGE_OUTPUT`` (bytes) when set."""
    env = os.environ.get("INDUCTION_LARGE_OUTPUT")
    try:
        return int(env) if env else LARGE_OUTPUT_BYTES
    except ValueError:
        raise InputError(
            f"$INDUCTION_LARGE_OUTPUT must be a number of bytes, got {env!r}"
        ) from None


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**27 else f"{n / 2**20:.1f} MiB"


def check_output_size(
    out: str | Path, nbytes: int, *, confirmed: bool, flag: str = "--yes"
) -> None:
    """Refuse to write ``nbytes`` to ``out`` if the disk lacks the space, or, unless
    ``confirmed`` (the user passed ``flag``), if it would fill more than :data:`FREE_SHARE` of
    the free space or exceed :func:`large_output_bytes` when a limit is set."""
    out = Path(out).expanduser().absolute()
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    free = shutil.disk_usage(parent).free
    if nbytes > free:
        raise InputError(
            f"{out} would take about {_gib(nbytes)} but only {_gib(free)} are free on its "
            "disk; free space or choose another output path"
        )
    if confirmed:
        return
    if nbytes > FREE_SHARE * free:
        raise InputError(
            f"{out} would take about {_gib(nbytes)}, more than half of the {_gib(free)} free on "
            f"its disk; pass {flag} to write it"
        )
    limit = large_output_bytes()
    if limit is not None and nbytes > limit:
        raise InputError(
            f"{out} would take about {_gib(nbytes)}, above the {_gib(limit)} limit for writing "
            f"without asking ($INDUCTION_LARGE_OUTPUT); pass {flag} to write it"
        )


def atomic_write(path: str | Path, write: Callable[[Any], None], mode: str = "w") -> Path:
    """Call ``write(fileobj)`` on a temp file opened with ``mode``, then rename it to ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        kwargs: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
        with open(tmp, mode, **kwargs) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    return path


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda fh: fh.write(text))


def write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda fh: fh.write(data), mode="wb")


def write_json(path: str | Path, obj: Any, indent: int = 2) -> Path:
    """JSON with a trailing newline; numpy scalars/arrays and paths are converted."""
    text = json.dumps(obj, indent=indent, default=_json_default) + "\n"
    return write_text(path, text)


def json_types(obj: Any) -> Any:
    """``obj`` as :func:`write_json` writes it and a reader gets it back: numpy scalars and
    arrays, paths and tuples become plain JSON types (what a seal or a comparison needs)."""
    return json.loads(json.dumps(obj, default=_json_default))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, torch tensors
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def write_table(df, path: str | Path) -> Path:
    """Write a pandas DataFrame as CSV, Parquet, JSON (records) or JSON lines, by suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(
            f"cannot write a table to {path.name!r}: unknown suffix {suffix or '(none)'!r}; "
            f"use one of {', '.join(TABLE_SUFFIXES)}"
        )
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            df.to_csv(tmp, index=False)
        elif suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        elif suffix == ".json":
            df.to_json(tmp, orient="records", indent=2)
        else:
            df.to_json(tmp, orient="records", lines=True)
    return path


def read_table(path: str | Path):
    """Read a table written by :func:`write_table` (suffix decides the format)."""
    import pandas as pd

    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix == ".json":
        return pd.read_json(path, orient="records")
    if suffix == ".jsonl":
        return pd.read_json(path, orient="records", lines=True)
    raise InputError(
        f"cannot read a table from {path.name!r}: unknown suffix {suffix or '(none)'!r}; "
        f"use one of {', '.join(TABLE_SUFFIXES)}"
    )


def refuse_overwrite_input(out: str | Path | None, *inputs: str | Path | None) -> None:
    """Raise InputError if ``out`` is, lies inside or contains one of ``inputs``
    (:func:`check_outputs` for one ``--out``)."""
    check_outputs({"--out": out}, inputs)


# --------------------------------------------------------------------------- input checks

#: Longest file name most file systems accept (bytes of one path component).
NAME_MAX = 255
#: The longest path the system takes (bytes, with the final NUL).
PATH_MAX = 4096


def check_output_path(
    path: str | Path | None,
    allowed_suffixes: tuple[str, ...] | None = None,
    flag_name: str = "--out",
    *,
    folder: bool = False,
) -> None:
    """Raise :class:`InputError` unless ``path`` can be written, *before* any work is done.

    Checks the suffix (when ``allowed_suffixes`` is given), that a file output is not a
    folder, that every path component fits the file system, that the parent exists or can be
    created (the nearest existing ancestor is a writable folder) and that a probe file can
    actually be created there (read-only mounts, ``/proc``, ``/sys``). Creates nothing that
    stays: the probe is removed at once and no missing parent is made. ``folder=True`` checks
    an output *folder* (``grow --out``) the same way, without the suffix and folder checks.
    """
    if path is None:
        return
    raw = os.fspath(path)
    if not raw.strip():
        raise InputError(f"{flag_name} is empty; pass a file path")
    path = Path(raw).expanduser()
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise InputError(
                f"{flag_name}: the name {part[:24]}... is {len(os.fsencode(part))} bytes long; "
                f"file names may have at most {NAME_MAX}; pass a shorter name"
            )
    whole = len(os.fsencode(os.path.abspath(path)))
    if whole >= PATH_MAX:
        raise InputError(
            f"{flag_name}: the path is {whole} bytes long; paths may have at most "
            f"{PATH_MAX - 1}; pass a shorter path"
        )
    if folder and path.is_symlink() and not path.exists():  # GR07: replaced whole, at the end
        raise InputError(
            f"{flag_name} {path} is a broken or looping symlink; remove it or choose another path"
        )
    if not folder:
        if path.is_dir():
            raise InputError(f"{flag_name} {path} is a folder; pass a file path")
        if allowed_suffixes is not None and path.suffix.lower() not in allowed_suffixes:
            raise InputError(
                f"{flag_name} {path}: unknown suffix {path.suffix or '(none)'!r}; "
                f"use one of {', '.join(allowed_suffixes)}"
            )
    parent = path.parent
    existing = parent
    while not existing.exists():
        if existing.is_symlink():
            raise InputError(f"{flag_name} {path}: {existing} is a broken or looping symlink")
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(
            f"{flag_name} {path}: {existing} is a file, not a folder; choose another location"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(
            f"{flag_name} {path}: cannot write in {existing} (permission denied); "
            "choose a writable location"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".induction-probe.", dir=existing)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise InputError(
            f"{flag_name} {path}: cannot write in {existing} ({reason}); choose a writable location"
        ) from None
    os.close(fd)
    os.unlink(probe)
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_BYTES:  # a full disk found before the work, not after it
        raise InputError(
            f"{flag_name} {path}: only {free // 1024} KiB free in {existing}; free some space "
            "or choose another output folder"
        )


#: Free space an output location needs before any work (a full disk found after the work
#: loses it); a write that still runs out names its path (:func:`disk_full`).
MIN_FREE_BYTES = 1 << 20


def read_json(path: str | Path, what: str = "JSON file") -> Any:
    """Parse a UTF-8 JSON file, turning every way it can be unreadable into one
    :class:`InputError` that names the file (missing, unreadable, not UTF-8, not JSON, nested
    too deeply)."""
    return parse_json(read_text(path, what), f"{what} {path}")


def read_text(path: str | Path, what: str = "file") -> str:
    """A UTF-8 text file's content; missing, unreadable or non-UTF-8 files raise one-line
    :class:`InputError` naming ``what`` and the path."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = stat.S_IFREG  # reported by the read below
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # reading one would wait for a writer
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket"
        raise InputError(f"{what} {path} is {kind}, not a regular file; save it to a file first")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{what} {path} is not UTF-8 text (bad byte at offset {e.start}); re-save it as UTF-8"
        ) from None
    except OSError as e:
        raise InputError(f"cannot read {what} {path}: {_os_reason(e)}") from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with one-line :class:`InputError` for malformed or absurdly nested
    text; ``where`` names the source in the message."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{where} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{where} is nested too deeply to be read as JSON") from None


def _os_reason(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "symlink loop; point it at a real file"
    return e.strerror or type(e).__name__


def check_input_path(path: str | Path | None, flag_name: str) -> None:
    """A one-line :class:`InputError` for an input path whose symlinks loop (resolving it
    would fail deep inside a command with a traceback)."""
    if path is None:
        return
    try:
        Path(path).expanduser().resolve()
    except (RuntimeError, OSError):  # Python < 3.13: RuntimeError("Symlink loop ...")
        raise InputError(
            f"{flag_name} {path} is a looping symlink; point it at a real file or folder"
        ) from None
