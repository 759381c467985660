"""One progress reporter for long loops: a rich bar on a terminal, one-line updates elsewhere.

::

    from induction.progress import progress

    with progress(enabled) as bar:
        advance = bar.task(len(chunks), "scanning heads")
        for chunk in chunks:
            ...
            advance()          # or advance(n); advance.describe("new label")

On a terminal (or in Jupyter) ``bar.task`` draws a transient rich progress bar on stderr. When
stderr is not a terminal (a log file, CI, a pipe) it writes plain lines instead, such as
``scanning heads: 6/12 (50%), 31 s elapsed, ~31 s left``: one each time another 10% is done
or 10 s have passed since the last line, whichever comes first, and a closing ``done`` line.
Tasks that finish within their first 2 s print nothing. ``INDUCTION_PROGRESS=bar|lines|off``
overrides the choice. Disabled (``progress(False)``) every call is a no-op, so callers never
branch on it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

MODES = ("bar", "lines", "off")
#: Lines mode: a line whenever this share of the task is newly done ...
LINE_STEP = 0.10
#: ... or this many seconds have passed since the last line ...
LINE_INTERVAL_S = 10.0
#: ... but nothing at all for a task that is done within this many seconds.
LINE_QUIET_S = 2.0


def progress_mode(enabled: bool = True, stream: IO[str] | None = None) -> str:
    """``bar``, ``lines`` or ``off``: ``$INDUCTION_PROGRESS`` if set, else by the stream."""
    if not enabled:
        return "off"
    env = os.environ.get("INDUCTION_PROGRESS", "").strip().lower()
    if env in MODES:
        return env
    stream = stream if stream is not None else sys.stderr
    try:
        if stream.isatty():
            return "bar"
    except (AttributeError, ValueError):
        pass
    return "bar" if _in_jupyter() else "lines"


def _in_jupyter() -> bool:
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


class Advance:
    """The callable a task hands back: ``advance(n=1)``, ``advance.describe(text)``."""

    def __call__(self, n: int = 1) -> None:
        pass

    def describe(self, text: str) -> None:
        pass


_NOOP = Advance()


class _BarAdvance(Advance):
    def __init__(self, bar: Any, tid: Any):
        self._bar, self._tid = bar, tid

    def __call__(self, n: int = 1) -> None:
        self._bar.advance(self._tid, n)

    def describe(self, text: str) -> None:
        self._bar.update(self._tid, description=text)


class _LineAdvance(Advance):
    def __init__(self, total: int, label: str, stream: IO[str], clock=None):
        clock = clock or time.monotonic
        self.total, self.label, self.stream, self.clock = total, label, stream, clock
        self.done = 0
        self.start = self.last = clock()
        self.next_share = LINE_STEP
        self.printed = False

    def __call__(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        now = self.clock()
        share = self.done / self.total
        if now - self.start < LINE_QUIET_S and not self.printed:
            self.next_share = (int(share / LINE_STEP) + 1) * LINE_STEP
            return
        if share >= self.next_share - 1e-9 or now - self.last >= LINE_INTERVAL_S:
            self._line(now)
            self.next_share = (int(share / LINE_STEP + 1e-9) + 1) * LINE_STEP

    def describe(self, text: str) -> None:
        self.label = text

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        text = f"{self.label}: {self.done}/{self.total} ({100 * self.done / self.total:.0f}%)"
        if self.done >= self.total:
            text += f", done in {elapsed:.0f} s"
        else:
            text += f", {elapsed:.0f} s elapsed"
            if self.done:
                text += f", ~{elapsed * (self.total - self.done) / self.done:.0f} s left"
        print(text, file=self.stream, flush=True)
        self.last = now
        self.printed = True

    def close(self) -> None:
        if self.printed and self.done < self.total:
            self._line(self.clock())


class Progress:
    """Context manager behind :func:`progress`; ``task(total, label)`` gives an advance."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        stream: IO[str] | None = None,
        mode: str | None = None,
        clock=None,
    ):
        self.stream, self.clock = stream, clock
        self.mode = mode or progress_mode(enabled, stream)
        if self.mode not in MODES:
            raise ValueError(f"progress mode must be one of {', '.join(MODES)}, got {mode!r}")
        self._bar = None
        self._lines: list[_LineAdvance] = []

    def __enter__(self) -> Progress:
        if self.mode == "bar":
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            console = Console(file=self.stream) if self.stream else Console(stderr=True)
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self._bar.__enter__()
        return self

    def task(self, total: int, label: str) -> Advance:
        """An advance callable for ``total`` steps; a no-op for ``total <= 1`` or when off."""
        if total <= 1 or self.mode == "off":
            return _NOOP
        if self._bar is not None:
            return _BarAdvance(self._bar, self._bar.add_task(label, total=total))
        if self.mode == "lines":
            line = _LineAdvance(total, label, self.stream or sys.stderr, self.clock)
            self._lines.append(line)
            return line
        return _NOOP

    def __exit__(self, *exc) -> bool:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None
        if exc[0] is None:
            for line in self._lines:
                line.close()
        return False


def progress(enabled: bool = True, *, stream: IO[str] | None = None) -> Progress:
    """A progress reporter (see the module docstring); use it as a context manager."""
    return Progress(enabled, stream=stream)
