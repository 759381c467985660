"""One progress reporter for long loops: a rich bar on a terminal, one-line updates elsewhere.

::

    from induction.progress import progress

    with progress(enabled) as bar:
        advance = bar.task(len(chunks), "forward passes over 384 prompts")
        for chunk in chunks:
            ...
            advance()          # or advance(n); advance.describe("new label")
        with bar.phase("loading smollm2"):   # a step that cannot count its progress
            ...

On a terminal (or in Jupyter) ``bar.task`` draws a transient rich progress bar on stderr. When
stderr is not a terminal (a log file, CI, a pipe) it writes plain lines instead, such as
``forward passes over 384 prompts: 6/12 (50%), 31 s elapsed, ~31 s left``: one each time
another 10% is done or 10 s have passed since the last line, whichever comes first, and a
closing ``done`` line.
A phase (``bar.phase(label)``, or :func:`phase` on its own) shows a spinner row on a terminal;
elsewhere it writes ``loading smollm2 ...`` once it has run 2 s and ``loading smollm2: done in
43 s`` when it ends. Tasks and phases that finish within their first 2 s print nothing.
``INDUCTION_PROGRESS=bar|lines|off`` overrides the choice. Disabled (``progress(False)``)
every call is a no-op, so callers never branch on it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Literal

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
    if env:
        from induction.errors import InputError

        raise InputError(
            f"INDUCTION_PROGRESS={env!r} is not a progress mode; set it to one of "
            f"{', '.join(MODES)} or unset it"
        )
    stream = stream if stream is not None else sys.stderr
    try:
        if stream is not None and stream.isatty():  # (no stderr under pythonw)
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

    def left(self, seconds: float) -> None:
        """Use the caller's estimate of the seconds left (e.g. from a cost model) in place
        of the linear one in the bar's or line's ``~N s left``."""


_NOOP = Advance()


class _BarAdvance(Advance):
    def __init__(self, bar: Any, tid: Any):
        self._bar, self._tid = bar, tid

    def __call__(self, n: int = 1) -> None:
        self._bar.advance(self._tid, n)

    def describe(self, text: str) -> None:
        self._bar.update(self._tid, description=text)

    def left(self, seconds: float) -> None:
        self._bar.update(self._tid, left_s=seconds, left_at=time.monotonic())


class _LineAdvance(Advance):
    def __init__(self, total: int, label: str, stream: IO[str], clock=None):
        clock = clock or time.monotonic
        self.total, self.label, self.stream, self.clock = total, label, stream, clock
        self.done = 0
        self.start = self.last = clock()
        self.next_share = LINE_STEP
        self.printed = False
        self.left_s: tuple[float, float] | None = None  # (seconds left, when said)

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

    def left(self, seconds: float) -> None:
        self.left_s = (seconds, self.clock())

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        text = f"{self.label}: {self.done}/{self.total} ({100 * self.done / self.total:.0f}%)"
        if self.done >= self.total:
            text += f", done in {elapsed:.0f} s"
        else:
            text += f", {elapsed:.0f} s elapsed"
            if self.left_s is not None:
                text += f", ~{max(0.0, self.left_s[0] - (now - self.left_s[1])):.0f} s left"
            elif self.done:
                text += f", ~{elapsed * (self.total - self.done) / self.done:.0f} s left"
        print(text, file=self.stream, flush=True)
        self.last = now
        self.printed = True

    def close(self) -> None:
        if self.printed and self.done < self.total:
            self._line(self.clock())


class _LinePhase:
    """Lines mode of a phase: ``label ...`` once it has run :data:`LINE_QUIET_S` (a timer
    thread, so a phase blocked in one long call still says so), ``label: done in N s`` at
    its end when the first line was written."""

    def __init__(self, label: str, stream: IO[str], clock=None):
        self.label, self.stream, self.clock = label, stream, clock or time.monotonic
        self._lock = threading.Lock()
        self._ended = self._said = False
        self._timer: threading.Timer | None = None

    def __enter__(self) -> _LinePhase:
        self.start = self.clock()
        if LINE_QUIET_S <= 0:
            self._say()
        else:
            self._timer = threading.Timer(LINE_QUIET_S, self._say)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _say(self) -> None:
        with self._lock:
            if not self._ended:
                print(f"{self.label} ...", file=self.stream, flush=True)
                self._said = True

    def __exit__(self, *exc) -> Literal[False]:  # never swallows an exception
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:  # after this no line of the timer's can appear
            self._ended = True
        if self._said and exc[0] is None:
            elapsed = self.clock() - self.start
            print(f"{self.label}: done in {elapsed:.0f} s", file=self.stream, flush=True)
        return False


class Progress:
    """Context manager behind :func:`progress`; ``task(total, label)`` gives an advance,
    ``phase(label)`` a context manager for a step that cannot count its progress."""

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
            from rich.text import Text

            class _Remaining(TimeRemainingColumn):
                """The caller's estimate (``advance.left``) when given, else rich's own."""

                def render(self, task):
                    if "left_s" not in task.fields or task.finished:
                        return super().render(task)
                    left = max(
                        0.0, task.fields["left_s"] - (time.monotonic() - task.fields["left_at"])
                    )
                    minutes, secs = divmod(int(left), 60)
                    hours, minutes = divmod(minutes, 60)
                    return Text(f"{hours:d}:{minutes:02d}:{secs:02d}", style="progress.remaining")

            console = Console(file=self.stream) if self.stream else Console(stderr=True)
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                _Remaining(),
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

    @contextmanager
    def phase(self, label: str) -> Iterator[None]:
        """A step with no count (loading a model, one long pass): a spinner row on a
        terminal, ``label ...`` and ``label: done in N s`` lines elsewhere when it lasts
        more than 2 s, nothing when off."""
        if self._bar is not None:
            tid = self._bar.add_task(label, total=None)
            try:
                yield
            finally:
                self._bar.remove_task(tid)
        elif self.mode == "lines":
            with _LinePhase(label, self.stream or sys.stderr, self.clock):
                yield
        else:
            yield

    def __exit__(self, *exc) -> Literal[False]:  # never swallows an exception
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


@contextmanager
def phase(label: str, enabled: bool = True, *, stream: IO[str] | None = None) -> Iterator[None]:
    """One phase (:meth:`Progress.phase`) with a reporter of its own; never open it inside
    another reporter's block (two bars on one terminal garble each other)."""
    with Progress(enabled, stream=stream) as bar, bar.phase(label):
        yield
