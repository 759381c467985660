"""Command options built from a job's config fields (``induction.config_fields``).

``@config_command(AblationConfig)`` turns ``def ablate(model, ..., config: AblationConfig)``
into a typer command whose options are the config's option fields, with the field's default,
type and help; the body receives the built (validated) config. Each setting is therefore
declared once, on the config, and the CLI, notebooks and benchmarks cannot drift apart.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typer

from induction.config_fields import (
    CLI_DEFAULT,
    CLI_TYPE,
    HELP,
    METAVAR,
    PARSE,
    flags_of,
    option_fields,
)

_SEQUENCES = (tuple, list, collections.abc.Sequence)


def _is_sequence(hint: Any) -> bool:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_is_sequence(a) for a in get_args(hint))
    return origin in _SEQUENCES


def cli_type(hint: Any) -> Any:
    """The type typer parses for a config field typed ``hint``: a ``Literal`` is read as
    ``str`` (the config's validation names the choices), a tuple or sequence as a repeatable
    ``list``, an optional one stays optional."""
    origin = get_origin(hint)
    if origin is Literal:
        return type(get_args(hint)[0])
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(hint) if a is not type(None)]
        if len(inner) == 1:
            return cli_type(inner[0]) | None
        return hint
    if origin in _SEQUENCES:
        args = [a for a in get_args(hint) if a is not Ellipsis]
        return list[cli_type(args[0]) if args else str]
    return hint


def _default(f: Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise TypeError(f"config field {f.name} needs a default to be a command-line option")


def config_parameters(config_cls: type) -> list[inspect.Parameter]:
    """One keyword parameter per option field of ``config_cls``, annotated for typer."""
    hints = typing.get_type_hints(config_cls)
    found = []
    for f in option_fields(config_cls):
        default = f.metadata[CLI_DEFAULT] if CLI_DEFAULT in f.metadata else _default(f)
        kind = f.metadata.get(CLI_TYPE) or cli_type(hints[f.name])
        if f.metadata.get(PARSE) is not None:  # spelt as text on the command line
            default, kind = (None if default is None else str(default)), str
        option = typer.Option(*flags_of(f), help=f.metadata[HELP], metavar=f.metadata.get(METAVAR))
        found.append(
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[kind, option],
            )
        )
    return found


def config_command(config_cls: type, **fixed: Any) -> Callable[[Callable], Callable]:
    """Decorate a command whose ``config`` parameter is replaced by ``config_cls``'s options.

    ``fixed``: config fields the command sets itself (not options, e.g. ``progress=True``)."""

    def wrap(fn: Callable) -> Callable:
        signature = inspect.signature(fn, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "config"]
        if len(own) == len(signature.parameters):
            raise TypeError(f"{fn.__name__} needs a `config` parameter for config_command")
        generated = [p for p in config_parameters(config_cls) if p.name not in fixed]
        clash = {p.name for p in own} & {p.name for p in generated}
        if clash:
            raise TypeError(f"{fn.__name__}: parameters {sorted(clash)} are config options")
        names = {p.name for p in generated}
        hints = typing.get_type_hints(config_cls)
        parsers = {
            f.name: f.metadata[PARSE]
            for f in option_fields(config_cls)
            if f.name in names and f.metadata.get(PARSE) is not None
        }
        sequences = {
            f.name
            for f in option_fields(config_cls)
            if f.name in names
            and f.name not in parsers
            and _is_sequence(f.metadata.get(CLI_TYPE) or hints[f.name])
        }

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            settings = {name: kwargs.pop(name) for name in names}
            for name in sequences:
                settings[name] = tuple(settings[name]) if settings[name] else None
            for name, parse in parsers.items():
                if settings[name] is not None:
                    settings[name] = parse(settings[name])
            return fn(**kwargs, config=config_cls(**settings, **fixed))

        # the config's options stand where ``config`` stood: ``--help`` lists them in that place
        parameters = []
        for p in signature.parameters.values():
            if p.name == "config":
                parameters += generated
            else:
                parameters.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        command.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=parameters, return_annotation=None
        )
        command.__annotations__ = {p.name: p.annotation for p in parameters}
        return command

    return wrap
