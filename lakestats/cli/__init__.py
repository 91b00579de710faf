"""The ``lakestats`` command line: a thin layer over ``lakestats.api``.

``parser`` builds the arguments, ``commands`` call the table handle, ``output`` prints the
answers (``--json``: their ``to_json()``; else text). Every failure prints one line
(``lakestats: error: …``) and exits non-zero; set ``LAKESTATS_DEBUG=1`` to see the
traceback. Bad arguments get the same one line (``--help`` prints the usage); an
unexpected exception too, named by its type. A closed stdout (``| head``) ends the command
quietly, as Unix tools do. Spark's own logs go to a file, named by ``--verbose`` (see
``lakestats.compute.session``). The settings (``lakestats.config``) are built once per
command from the environment, the config file and the global and Spark flags.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lakestats import config
from lakestats.cli.commands import COMMANDS
from lakestats.cli.option_flags import (  # noqa: F401 - public: the options' flags
    add_option_flags,
    options_from_args,
)
from lakestats.cli.output import output_for
from lakestats.cli.parser import (  # noqa: F401 - public: the parser
    FREE_TEXT_OPTIONS,
    attach_free_text,
    build_parser,
    fail,
)
from lakestats.errors import LakestatsError


def settings_of(args: argparse.Namespace) -> config.Settings:
    """The command's settings: environment, then the config file, then the flags
    (``--master`` overrides an inherited remote, ``--remote`` wins over any master)."""
    return config.load(
        arguments={
            "config_file": getattr(args, "config", None),
            "spark_conf": config.parse_spark_conf(getattr(args, "spark_conf", None)),
            "spark_master": getattr(args, "master", None),
            "spark_remote": getattr(args, "remote", None),
            "ship_lakestats": getattr(args, "ship_lakestats", None),
            "catalog": getattr(args, "catalog", None),
            "warehouse": getattr(args, "warehouse", None),
        }
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(attach_free_text(sys.argv[1:] if argv is None else argv))
    debug = False
    earlier_log = _spark_log()
    try:
        settings = settings_of(args)
        debug = settings.debug
        with config.use(settings):
            COMMANDS[args.command](args, output_for(args))
            sys.stdout.flush()  # a closed pipe shows here, inside the handler
        return 0
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly; Python's exit flush must not fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a Unix tool killed by the signal
    except LakestatsError as exc:
        if debug:
            raise
        fail(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        print("lakestats: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug or an error no layer translated: still one line
        if debug:
            raise
        fail(
            f"unexpected {type(exc).__name__}: {_first_line(exc)} "
            "(LAKESTATS_DEBUG=1 shows the traceback)"
        )
        return 1
    finally:
        log = _spark_log()
        if log is not None and log != earlier_log and (debug or getattr(args, "verbose", False)):
            print(f"lakestats: spark log: {log}", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"


def _spark_log() -> str | None:
    """The log file of the Spark session lakestats started, if it started one (``--verbose``
    and ``LAKESTATS_DEBUG`` name it when this command started it)."""
    session = sys.modules.get("lakestats.compute.session")
    return session.spark_log_path() if session is not None else None
