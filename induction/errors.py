"""Errors the workbench reports to users as one line (CLI: exit code 2, no traceback)."""


class WorkbenchError(Exception):
    """Bad input or an unusable resource; the message names the problem and the fix."""


class ModelLoadError(WorkbenchError):
    """A model spec that cannot be loaded."""


class InputError(WorkbenchError, ValueError):
    """A bad argument or input file."""


class LineageError(WorkbenchError):
    """A malformed duplication log, loop plan or mergekit config."""
