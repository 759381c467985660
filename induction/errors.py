"""Errors the workbench reports to users as one line (CLI: exit code 2, no traceback)."""


class WorkbenchError(Exception):
    """Bad input or an unusable resource; the message names the problem and the fix."""


class ModelLoadError(WorkbenchError):
    """A model spec that cannot be loaded."""


class InputError(WorkbenchError, ValueError):
    """A bad argument or input file."""


class LineageError(WorkbenchError):
    """A malformed duplication log, loop plan or mergekit config."""


def one_line(e: BaseException, limit: int = 240) -> str:
    """An exception's message on one line (white space collapsed), at most ``limit`` chars."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
