"""``--help`` of every command and subcommand prints its usage and exits 0.

The command lines are found by walking the real parser (sub-parsers, and the choices of a
positional such as ``sample create``), so a command added later is swept too.
"""

from __future__ import annotations

import argparse

import pytest

from lakestats import cli


def _command_lines(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list:
    """Every command line that reaches a parser or a positional's choice, ``--help`` last."""
    lines = [(*prefix, "--help")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                lines += _command_lines(sub, (*prefix, name))
        elif not action.option_strings and action.choices and prefix:
            lines += [(*prefix, str(choice), "--help") for choice in action.choices]
    return lines


LINES = _command_lines(cli.build_parser())


def test_the_walk_finds_every_command() -> None:
    commands = {line[0] for line in LINES if len(line) > 1}
    assert {"analyze", "sample", "serve", "spark-register", "sql", "expire"} <= commands
    assert ("sample", "create", "--help") in LINES and ("sample", "show", "--help") in LINES
    assert len(LINES) >= 20


@pytest.mark.parametrize("line", LINES, ids=[" ".join(line) for line in LINES])
def test_help_exits_zero(line: tuple[str, ...], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(line))
    assert stopped.value.code == 0
    out = capsys.readouterr()
    command = " ".join(w for w in line if w != "--help" and not _is_choice(line, w))
    assert out.out.startswith(f"usage: lakestats {command}".rstrip()), out.out[:200]
    assert "Traceback" not in out.err and out.err == ""


def _is_choice(line: tuple[str, ...], word: str) -> bool:
    """``create`` in ``sample create --help``: a positional's value, not in the usage's prog."""
    return len(line) == 3 and word == line[1]
