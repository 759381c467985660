"""Process-wide run settings shared by the CLI, the Python API and the notebooks.

Two policies live here so that every entry point behaves the same:

- :func:`apply_thread_policy`: how many CPU threads torch uses. An explicit value wins, else
  ``$INDUCTION_THREADS``, else 1 for a zoo-vocabulary model on CPU (its tiny matrices gain
  nothing from more threads and lose a lot on a busy machine: 2.6-3.5x slower scans on two
  shared cores), else torch's own default. :func:`induction.load_model` applies it to every
  model it loads; the CLIs' ``--threads`` is the explicit value.
- :func:`quiet_loading`: transformers and huggingface_hub logs and progress bars are hidden
  while a model loads, unless ``verbose=True`` or ``$INDUCTION_VERBOSE`` is set; the previous
  settings are restored afterwards.

Import-light: torch and transformers are imported inside the functions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from induction.errors import InputError

if TYPE_CHECKING:
    from induction.models.model_types import ModelInfo

THREADS_ENV = "INDUCTION_THREADS"
VERBOSE_ENV = "INDUCTION_VERBOSE"
#: Threads for zoo-vocabulary models on CPU when nothing else is asked for.
ZOO_CPU_THREADS = 1

_TRUE = ("1", "true", "yes", "on")
# torch's thread count when this module was first imported (induction.models.loading imports it
# right after torch), and the count the policy last set. A count that is neither was chosen by the
# caller (torch.set_num_threads before load_model): the zoo default leaves it alone.
_torch_default: int | None = None
_set_by_policy: int | None = None


def _note_torch_default() -> None:
    global _torch_default
    if _torch_default is None and "torch" in sys.modules:
        _torch_default = sys.modules["torch"].get_num_threads()


_note_torch_default()


def _env_threads() -> int | None:
    env = os.environ.get(THREADS_ENV, "").strip()
    if not env:
        return None
    try:
        value = int(env)
    except ValueError:
        raise InputError(f"${THREADS_ENV}={env!r}: expected a positive integer") from None
    return _check_threads(value, f"${THREADS_ENV}")


def thread_count(info: ModelInfo | None = None, threads: int | None = None) -> int | None:
    """The thread count the policy picks for ``info`` (a ModelInfo), or None: torch's default."""
    if threads is not None:
        return _check_threads(threads, "threads")
    env = _env_threads()
    if env is not None:
        return env
    if info is not None and _zoo_on_cpu(info):
        return ZOO_CPU_THREADS
    return None


def apply_thread_policy(info: ModelInfo | None = None, threads: int | None = None) -> int:
    """Set torch's CPU thread count by the policy (module docstring); returns the count now.

    ``threads`` and ``$INDUCTION_THREADS`` are always applied. The zoo default (1) and the
    return to torch's default are only applied while the count is torch's own or one this
    policy set, so a script that called ``torch.set_num_threads`` itself keeps its choice.
    """
    global _set_by_policy
    import torch

    _note_torch_default()
    explicit = threads is not None or _env_threads() is not None
    wanted = thread_count(info, threads)
    current = torch.get_num_threads()
    ours = current == _torch_default or current == _set_by_policy
    if wanted is None:
        if ours and _torch_default is not None and current != _torch_default:
            torch.set_num_threads(_torch_default)
        _set_by_policy = None
        return torch.get_num_threads()
    if not explicit and not ours:
        return current
    if current != wanted:
        torch.set_num_threads(wanted)
    _set_by_policy = wanted
    return wanted


def _zoo_on_cpu(info: ModelInfo | None) -> bool:
    return bool(getattr(info, "zoo_vocabulary", False)) and str(
        getattr(info, "device", "")
    ).startswith("cpu")


def _check_threads(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{what} must be a positive integer, got {value!r}")
    return value


def verbose_default(verbose: bool | None = None) -> bool:
    """``verbose`` if given, else whether ``$INDUCTION_VERBOSE`` is set to a true value."""
    if verbose is not None:
        return bool(verbose)
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in _TRUE


@contextmanager
def quiet_loading(verbose: bool | None = None) -> Iterator[None]:
    """Hide transformers/hub logs and progress bars inside the block (unless verbose)."""
    if verbose_default(verbose):
        yield
        return
    import logging

    env_key = "HF_HUB_DISABLE_PROGRESS_BARS"
    saved_env = os.environ.get(env_key)
    os.environ[env_key] = "1"
    loggers = [logging.getLogger(n) for n in ("transformers", "transformer_lens")]
    saved_levels = [lg.level for lg in loggers]
    restore: list = []
    try:
        import transformers

        tlog = transformers.utils.logging
        level, bars = tlog.get_verbosity(), tlog.is_progress_bar_enabled()
        tlog.set_verbosity_error()
        tlog.disable_progress_bar()
        restore.append(lambda: tlog.set_verbosity(level))
        if bars:
            restore.append(tlog.enable_progress_bar)
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    try:
        import huggingface_hub.utils as hub

        if not hub.are_progress_bars_disabled():
            hub.disable_progress_bars()
            restore.append(hub.enable_progress_bars)
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    for lg in loggers:
        lg.setLevel(max(lg.level, logging.ERROR))
    try:
        yield
    finally:
        for undo in restore:
            undo()
        for lg, lvl in zip(loggers, saved_levels, strict=True):
            lg.setLevel(lvl)
        if saved_env is None:
            os.environ.pop(env_key, None)
        else:
            os.environ[env_key] = saved_env
