"""The flags of the options classes (``lakestats.options``): each field's flag, default and
help added to a command's parser, and the parsed flags read back into the options; apart from
the parser because ``commands.py`` builds its options with it too."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from lakestats import options as opts
from lakestats.errors import InvalidArgumentError
from lakestats.options import AnalyzeOptions, SampleOptions

Options = TypeVar("Options", AnalyzeOptions, SampleOptions)


def columns_of(text: str | None, flag: str = "--columns") -> list[str] | None:
    """``--columns a,b``: the names, or None when the flag is not given."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise InvalidArgumentError(f"{flag} is empty: list column names separated by commas")
    return names


def _group_of(text: str) -> list[str]:
    """One ``--column-groups a,b``: its names (an empty one is one error line)."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise InvalidArgumentError(
            "--column-groups is empty: list two or more column names separated by commas"
        )
    return names


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number 0 or more, got {text!r}")
    return value


_READERS: dict[str, Callable[[str], object]] = {
    opts.CLI_COUNT: positive,
    opts.CLI_INT: int,
    opts.CLI_FLOAT: float,
    opts.CLI_TEXT: str,
    opts.CLI_COLUMNS: str,  # split by columns_of when the options are built (one error line)
    opts.CLI_GROUPS: str,  # likewise, each of the repeated flag's values
}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_option_flags(p: argparse.ArgumentParser, cls: type[Options]) -> None:
    """The flags of ``cls``'s fields (``lakestats.options``): name, default, help."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for f in dataclasses.fields(cls):
        flag: opts.Flag | None = f.metadata["flag"]
        if flag is None:
            continue
        target: argparse._ActionsContainer = p
        if flag.group:
            if flag.group not in groups:  # one group per name: an empty one breaks --help
                groups[flag.group] = p.add_mutually_exclusive_group()
            target = groups[flag.group]
        dest = _dest(flag.name)
        if flag.reads == opts.CLI_SWITCH:
            target.add_argument(flag.name, dest=dest, action="store_true", help=f.metadata["help"])
            continue
        if flag.reads == opts.CLI_GROUPS:  # repeatable: one group of columns each
            target.add_argument(
                flag.name, dest=dest, action="append", type=str, help=f.metadata["help"]
            )
            continue
        raw: Any = f.default
        default = raw if raw is None else raw // flag.scale
        shown = f" (default {default})" if default is not None else ""
        target.add_argument(
            flag.name,
            dest=dest,
            type=_READERS[flag.reads],
            default=default,
            help=f.metadata["help"] + shown,
        )


def options_from_args(args: argparse.Namespace, cls: type[Options], **fixed: Any) -> Options:  # noqa: ANN401 - fields of either options class
    """A ``cls`` (``AnalyzeOptions``, ``SampleOptions``) from its flags, plus ``fixed``."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        flag: opts.Flag | None = f.metadata["flag"]
        if flag is None:
            continue
        value = getattr(args, _dest(flag.name))
        if flag.reads == opts.CLI_SWITCH:
            value = not value if flag.negate else value
        elif flag.reads == opts.CLI_COLUMNS:
            value = columns_of(value)
        elif flag.reads == opts.CLI_GROUPS:
            value = tuple(tuple(_group_of(text)) for text in value or ())
        elif value is not None and flag.scale != 1:
            value = value * flag.scale
        values[f.name] = value
    return cls(**values, **fixed)
