"""The command line: every failure is one line, no silently wrong answer.

The sweep runs the real ``lakestats`` command in a subprocess for every command it lists,
against a table of bad inputs, and checks the contract: a non-zero exit, exactly one stderr
line beginning ``lakestats: error:``, no traceback, and the statistics root byte-identical.
The other tests reproduce reported defects, each asserted by error type and message, and
``partitions-containing`` checked against DuckDB.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakestats.api as ls
from lakestats import cli
from lakestats.errors import (
    ColumnNotFoundError,
    DataFileError,
    InvalidArgumentError,
    LakestatsError,
    StorageError,
    TableNotFoundError,
)

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 300


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("LAKESTATS_DEBUG", None)
    env["LAKESTATS_SPARK_MASTER"] = "local[2]"
    return env


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lakestats.cli", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def tree_hashes(*roots: Path) -> dict[str, str]:
    """Every file under ``roots`` (or the root itself when it is a file) by its SHA-256."""
    out = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def assert_one_error_line(done: subprocess.CompletedProcess, text: str = "") -> str:
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("lakestats: error: "), lines[0]
    assert text in lines[0], lines[0]
    return lines[0]


def _write_partitioned(root: Path, partitions: dict[str, pa.Table]) -> Path:
    for name, table in partitions.items():
        (root / name).mkdir(parents=True)
        pq.write_table(table, root / name / "0.parquet")
    return root


# -- the sweep -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One analyzed table (the only Spark run of the sweep), a never-analyzed root, a root
    that is a file, a table with a truncated data file, and an empty working directory."""
    base = tmp_path_factory.mktemp("sweep")
    table = _write_partitioned(
        base / "t",
        {
            "p=a": pa.table({"n": [1, 1, 2], "s": ["x", "y", "y"]}),
            "p=z": pa.table({"n": [2, 3, 3], "s": ["y", "z", "z"]}),
        },
    )
    root = base / "s"
    done = run_cli(["analyze", str(table), "--stats-root", str(root), "--verbose"], cwd=base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("analyzed 2 partitions"), done.stdout
    # one line means one line: no Spark or JVM noise, only the log file --verbose names
    [line] = done.stderr.splitlines()
    assert line.startswith("lakestats: spark log: "), done.stderr
    log = Path(line.removeprefix("lakestats: spark log: "))
    assert "WARN" in log.read_text() or "Using incubator" in log.read_text()
    damaged = shutil.copytree(table, base / "damaged")
    data = (damaged / "p=z" / "0.parquet").read_bytes()
    (damaged / "p=z" / "0.parquet").write_bytes(data[: len(data) // 2])
    file_root = base / "a_file"
    file_root.write_text("not a directory")
    cwd = base / "cwd"
    cwd.mkdir()
    return {
        "T": table,
        "S": root,
        "NEVER": base / "never",
        "FILE": file_root,
        "DAMAGED": damaged,
        "MISSING": base / "missing",
        "DATAFILE": damaged / "p=a" / "0.parquet",
        "cwd": cwd,
    }


# (command line with placeholders, text the error line must contain)
CASES = [
    # analyze: everything wrong with the request fails before Spark starts
    ("analyze {MISSING}", "does not exist"),
    ("analyze nosuchtable", "no embedded catalog at"),
    ("analyze nodb.nosuch", "no embedded catalog at"),
    ("analyze {T} --stats-root {S} --columns nope", "'nope'"),
    ("analyze {T} --stats-root {S} --columns ,", "--columns is empty"),
    ("analyze {T} --stats-root {S} --bins 0", "--bins"),
    ("analyze {T} --stats-root {S} --bins many", "--bins"),
    ("analyze {T} --stats-root {S} --max-frequencies -1", "--max-frequencies"),
    ("analyze {T} --stats-root {S} --max-slice-mb 0", "slice size"),
    ("analyze {T} --stats-root {S} --snapshot 5", "without snapshots"),
    ("analyze {T} --stats-root {S} --snapshot x", "--snapshot"),
    ("analyze {T} --stats-root {S} --as-of 99999999999999999999", "out of range"),
    ("analyze {T} --stats-root {S} --as-of 0001-01-01T00:00:00+01:00", "out of range"),
    ("analyze {T} --stats-root {S} --as-of 2024-01-01", "no snapshot at or before"),
    ("analyze {T} --stats-root {S} --as-of yesterday", "ISO-8601"),
    ("analyze {T} --stats-root {FILE}", "cannot write"),
    ("analyze {T} --stats-root {S} --frobnicate", "unrecognized arguments"),
    ("analyze {T} --stats-root {S} --from-sample", "no sample of"),
    ("analyze {T} --stats-root {S} --from-sample --where 'x > 1'", "--where and --exact need"),
    ("analyze {T} --stats-root {S} --from-sample --exact", "--where and --exact need"),
    # sample
    ("sample create {T} --stats-root {S} --fraction 0", "--fraction must be in (0, 1]"),
    ("sample create {T} --stats-root {S} --fraction 1.5", "--fraction must be in (0, 1]"),
    ("sample create {T} --stats-root {S} --rows 0", "--rows must be a positive"),
    ("sample create {T} --stats-root {S} --rows 5 --fraction 0.1", "not allowed with"),
    ("sample create {MISSING}", "does not exist"),
    ("sample refresh {T} --stats-root {S}", "run `lakestats sample create"),
    ("sample show {T} --stats-root {S} --json", "no sample of"),
    ("sample frobnicate {T}", "invalid choice"),
    # partitions
    ("partitions {MISSING}", "does not exist"),
    ("partitions {T} --stats-root {NEVER}", "no statistics"),
    ("partitions {T} --stats-root {FILE}", "is not a directory"),
    ("partitions nosuchtable", "no embedded catalog at"),
    # show
    ("show {T} --stats-root {S} --columns nope", "'nope'"),
    ("show {T} --stats-root {S} --columns n,nope --json", "'nope'"),
    ("show {T} --stats-root {S} --partition p=a --columns nope", "'nope'"),
    ("show {T} --stats-root {S} --partition p=nope", "no partition"),
    ("show {T} --stats-root {S} --partition garbage", "k=v"),
    ("show {T} --stats-root {S} --snapshot 5", "not a snapshot"),
    ("show {T} --stats-root {S} --as-of 2020-01-01T00:00:00Z", "no snapshot at or before"),
    ("show {T} --stats-root {S} --as-of 99999999999999999999", "out of range"),
    ("show {T} --stats-root {S} --as-of 0001-01-01T00:00:00+01:00", "out of range"),
    ("show {T} --stats-root {S} --snapshot 1 --as-of 2024-01-01", "not both"),
    ("show {T} --stats-root {NEVER}", "no statistics"),
    ("show {T} --stats-root {FILE}", "is not a directory"),
    ("show {MISSING}", "does not exist"),
    ("profile {MISSING}", "does not exist"),
    ("profile {T} --stats-root {NEVER}", "no statistics"),
    ("profile {T} --stats-root {S} --snapshot 5", "not a snapshot"),
    ("profile {T} --stats-root {S} --as-of 2020-01-01T00:00:00Z", "no snapshot at or before"),
    ("profile {T} --stats-root {S} --snapshot 1 --as-of 2020-01-01T00:00:00Z", "not both"),
    ("show", "required: table"),
    # frequencies
    ("frequencies {T} --stats-root {S} --column nope", "'nope'"),
    ("frequencies {T} --stats-root {S} --column nope --partition p=a", "'nope'"),
    ("frequencies {T} --stats-root {S} --column n --partition p=nope", "no partition"),
    ("frequencies {T} --stats-root {S} --column n --top -1", "--top"),
    ("frequencies {T} --stats-root {S} --column n --top ten", "--top"),
    ("frequencies {T} --stats-root {S}", "--column"),
    ("frequencies {T} --stats-root {NEVER} --column n", "no statistics"),
    # histogram
    ("histogram {T} --stats-root {S} --column nope", "'nope'"),
    ("histogram {T} --stats-root {S} --column n --start 5 --stop 2", "0 <= start <= stop"),
    ("histogram {T} --stats-root {S} --column n --start -1", "--start"),
    ("histogram {T} --stats-root {S} --column s", "has no histogram"),
    ("histogram {T} --stats-root {S} --column n --partition p=nope", "no partition"),
    # partitions-containing
    # stats (batched lookups)
    ("stats {T} --stats-root {S} --columns nope", "'nope'"),
    ("stats {T} --stats-root {S}", "--columns"),
    ("stats {T} --stats-root {NEVER} --columns n", "no statistics"),
    ("stats {T} --stats-root {S} --columns n --where 'n >'", "n >"),
    # estimate
    ("estimate {T} --stats-root {S} --where 'nope = 1'", "'nope'"),
    ("estimate {T} --stats-root {S}", "--where"),
    ("estimate {T} --stats-root {S} --where 'f(n) = 1'", "unsupported syntax"),
    ("estimate {T} --stats-root {NEVER} --where 'n = 1'", "no statistics"),
    # predicates over the documented limits, huge literals, IN ()
    ("estimate {T} --stats-root {S} --where '" + "(" * 101 + "n = 1" + ")" * 101 + "'",
     "over the limit of 100"),
    ("stats {T} --stats-root {S} --columns n --where '" + "(" * 101 + "n = 1" + ")" * 101 + "'",
     "over the limit of 100"),
    ("estimate {T} --stats-root {S} --where 'n = 1e1000000'", "outside the range of column"),
    ("stats {T} --stats-root {S} --columns n --where 'n = 1e1000000'", "outside the range"),
    ("estimate {T} --stats-root {S} --where 'n IN ()'", "IN () lists no value"),
    ("estimate {T} --stats-root {S} --where 'n = 1 AND'", "a condition is missing"),
    # spark-register (only --dry-run and argument errors: they fail before Spark starts)
    ("spark-register {T} --stats-root {S}", "--name"),
    ("spark-register {T} --stats-root {NEVER} --name t --dry-run", "no statistics"),
    ("spark-register {T} --stats-root {NEVER} --name t", "no statistics"),  # no JVM started
    ("spark-register {MISSING} --name t --dry-run", "does not exist"),
    ("spark-register {T} --stats-root {S} --name t --bins 0 --dry-run", "bins"),
    # rank / quantile (exact ranks exist only after analyze --exact)
    ("rank {T} --stats-root {S} --column n --value 1", "analyze --exact"),
    ("rank {T} --stats-root {S} --column nope --value 1", "'nope'"),
    ("rank {T} --stats-root {NEVER} --column n --value 1", "no statistics"),
    ("rank {T} --stats-root {S} --column n", "--value"),
    ("quantile {T} --stats-root {S} --column n --p 2", "between 0 and 1"),
    ("quantile {T} --stats-root {S} --column n --p 0.5", "analyze --exact"),
    ("quantile {T} --stats-root {NEVER} --column n --p 0.5", "no statistics"),
    # serve: a bad config or port fails before anything listens
    ("spark-jar --spark-version 3.4.0", "supports Spark 3.5 and 4.x"),
    ("spark-jar --spark-version abc", "not a Spark version"),
    ("spark-jar --nope", "unrecognized arguments"),
    ("serve --port -1", "--port"),
    ("serve --port abc", "--port"),
    ("serve --tables {MISSING}", "cannot read the tables config"),
    ("serve --tables {DATAFILE}", "not text"),
    ("serve --port 70000", "0 to 65535"),
    ("serve --host 0.0.0.0 --port 0", "with no token configured"),
    # token: a bad name, grant or file adds nothing and prints no secret
    ("token reader", "--tables"),
    ("token 'bad name' --tables t", "token name 'bad name'"),
    ("token reader --tables t,*", 'give "*" alone'),
    ("token reader --tables t --add-to {MISSING}", "cannot read the tables config"),
    ("token reader --tables t --add-to {DATAFILE}", "not text"),
    ("partitions-containing {T} --stats-root {S} --column nope --value 1", "'nope'"),
    ("partitions-containing {T} --stats-root {S} --column n --value abc", "not a value"),
    ("partitions-containing {T} --stats-root {S} --column n", "--value"),
    ("partitions-containing {T} --stats-root {NEVER} --column n --value 1", "no statistics"),
    # history
    ("history {T} --stats-root {FILE}", "is a file"),
    ("history {MISSING}", "does not exist"),
    ("history nosuchtable", "no embedded catalog at"),
    # expire
    ("expire {T} --stats-root {S} --retain-last 0", "--retain-last"),
    ("expire {T} --stats-root {S} --orphan-age-minutes -5", "--orphan-age-minutes"),
    ("expire {T} --stats-root {FILE}", "is a file"),
    ("expire {MISSING}", "does not exist"),
    # export-paimon
    ("export-paimon {T} --stats-root {S} --version 99", "version 99"),
    ("export-paimon {T} --stats-root {NEVER}", "no statistics"),
    ("export-paimon {T} --stats-root {S} --version two", "--version"),
    # sql
    ("sql 'SELECT 1'", "only ANALYZE TABLE"),
    ("sql 'ANALYZE TABLE {MISSING} COMPUTE STATISTICS NOSCAN'", "does not exist"),
    ("sql 'ANALYZE TABLE nosuch COMPUTE STATISTICS'", "no embedded catalog at"),
    ("sql 'ANALYZE TABLE {DAMAGED} COMPUTE STATISTICS NOSCAN' --stats-root {NEVER}", "footer"),
    ("sql 'ANALYZE TABLE {T} COMPUTE STATISTICS NOSCAN' --stats-root {FILE}", "cannot write"),
    ("sql 'ANALYZE TABLE {T} COMPUTE STATISTICS FOR COLUMNS nope' --stats-root {S}", "'nope'"),
    # the command itself
    ("", "required: command"),
    ("frobnicate {T}", "invalid choice"),
]


def _expand(line: str, paths: dict[str, Path]) -> list[str]:
    import shlex

    return shlex.split(line.format(**{k: str(v) for k, v in paths.items()}))


def test_sweep_covers_every_command(sweep: dict[str, Path]) -> None:
    """Every command ``lakestats --help`` lists has at least three bad-input cases."""
    done = run_cli(["--help"], cwd=sweep["cwd"])
    assert done.returncode == 0 and done.stdout.startswith("usage: lakestats")
    listed = re.search(r"\{([a-z,-]+)\}", done.stdout).group(1).split(",")
    assert len(listed) >= 10
    for command in listed:
        cases = [c for c, _ in CASES if c.split(" ", 1)[0] == command]
        assert len(cases) >= 3, f"no sweep cases for {command}"


@pytest.fixture(scope="module")
def sweep_results(sweep: dict[str, Path]) -> dict[str, tuple]:
    """Every case run once, a few at a time (each is a fresh interpreter importing pyarrow:
    ~1.5 s of CPU), with the roots hashed before the first and after the last."""
    from concurrent.futures import ThreadPoolExecutor

    roots = [sweep["S"], sweep["FILE"], sweep["T"], sweep["DAMAGED"]]
    before = tree_hashes(*roots)
    with ThreadPoolExecutor(3) as pool:
        done = list(pool.map(lambda case: run_cli(_expand(case[0], sweep), sweep["cwd"]), CASES))
    return {
        "results": {line: result for (line, _), result in zip(CASES, done, strict=True)},
        "hashes": (before, tree_hashes(*roots)),
    }


@pytest.mark.parametrize(("line", "text"), CASES, ids=[c or "(none)" for c, _ in CASES])
def test_sweep(sweep_results: dict, line: str, text: str) -> None:
    assert_one_error_line(sweep_results["results"][line], text)


def test_sweep_changes_nothing(sweep: dict[str, Path], sweep_results: dict) -> None:
    """No failed command wrote a byte: the roots and tables hash the same, no statistics
    root appeared where none was, and nothing was created in the working directory."""
    before, after = sweep_results["hashes"]
    assert after == before
    assert not sweep["NEVER"].exists(), "a failed command created a statistics root"
    assert list(sweep["cwd"].iterdir()) == [], "a failed command created files in the cwd"


def test_help_and_verbose(sweep: dict[str, Path]) -> None:
    """``--help`` still prints the usage; ``--verbose`` names Spark's log file."""
    done = run_cli(["show", "--help"], cwd=sweep["cwd"])
    assert done.returncode == 0 and "usage: lakestats show" in done.stdout and "--columns" in (
        done.stdout
    )
    done = run_cli(["show", str(sweep["T"]), "--stats-root", str(sweep["S"]), "--verbose"],
                   cwd=sweep["cwd"])
    assert done.returncode == 0 and "Traceback" not in done.stderr


def test_broken_pipe_is_quiet(sweep: dict[str, Path]) -> None:
    """``show --json | head -c 1``: the reader goes away, no BrokenPipeError traceback."""
    args = [sys.executable, "-m", "lakestats.cli", "show", str(sweep["T"]), "--stats-root",
            str(sweep["S"]), "--json"]
    writer = subprocess.Popen(args, cwd=sweep["cwd"], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert writer.stdout.read(1) == b"{"
    writer.stdout.close()  # as `head -c 1` exits
    _, err = writer.communicate(timeout=TIMEOUT)
    assert err.decode() == ""
    assert writer.returncode in (0, 141)
    # the same command with its output read is valid JSON (the pipe was the only difference)
    full = run_cli(args[3:], cwd=sweep["cwd"])
    assert full.returncode == 0 and full.stdout.startswith("{")


# -- reproductions, in process -----------------------------------------------------------


def _fails(capsys: pytest.CaptureFixture, args: list[str], error: type, text: str) -> None:
    """One line through ``cli.main``; and with ``LAKESTATS_DEBUG`` the typed exception."""
    code = cli.main(args)
    err = capsys.readouterr().err
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lakestats: error: "), err
    assert text in lines[0], lines[0]
    os.environ["LAKESTATS_DEBUG"] = "1"
    try:
        with pytest.raises(error, match=re.escape(text)):
            cli.main(args)
    finally:
        del os.environ["LAKESTATS_DEBUG"]
        capsys.readouterr()  # the debug run's own output (the Spark log line)
    assert issubclass(error, LakestatsError)


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["show", "t", "--bogus"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "lakestats: error: unrecognized arguments: --bogus (see `lakestats --help`)"
    ]
    with pytest.raises(SystemExit):
        cli.main(["histogram", "t", "--column", "n", "--start", "x"])
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("lakestats: error: argument --start: expected a whole number")
    assert line.endswith("(see `lakestats histogram --help`)")


def test_as_of_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for text in ("0001-01-01T00:00:00+01:00", "99999999999999999999", "9999-12-31T23:59:59-05:00"):
        with pytest.raises(SystemExit):
            cli.main(["show", str(tmp_path), "--as-of", text])
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith(f"lakestats: error: argument --as-of: {text!r} is out of range")
        assert "between 0001-01-02 and 9999-12-30" in line


def test_catalog_lookup_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A failed lookup of a name without a slash used to create ./warehouse/catalog.db."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LAKESTATS_WAREHOUSE", raising=False)
    for command in (["show", "lineitem"], ["history", "db.lineitem"], ["analyze", "db.x"]):
        _fails(capsys, command, TableNotFoundError, "not found in catalog 'lakestats': there is no")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TableNotFoundError, match="no embedded catalog"):
        ls.open_table("db.t", warehouse=str(tmp_path / "w")).format  # noqa: B018
    assert not (tmp_path / "w").exists()


def test_noscan_damaged_file_and_unwritable_root(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    table = _write_partitioned(
        tmp_path / "t", {"p=1": pa.table({"n": [1, 2]}), "p=2": pa.table({"n": [3]})}
    )
    data = (table / "p=2" / "0.parquet").read_bytes()
    (table / "p=2" / "0.parquet").write_bytes(data[:-9])
    root = tmp_path / "s"
    _fails(
        capsys,
        ["sql", f"ANALYZE TABLE {table} COMPUTE STATISTICS NOSCAN", "--stats-root", str(root)],
        DataFileError,
        f"cannot read the footer of data file {table / 'p=2' / '0.parquet'}",
    )
    assert not root.exists()
    (table / "p=2" / "0.parquet").write_bytes(data)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _fails(
        capsys,
        ["sql", f"ANALYZE TABLE {table} COMPUTE STATISTICS NOSCAN", "--stats-root",
         str(blocker / "s")],
        StorageError,
        "cannot write",
    )
    assert blocker.read_text() == "x"


def test_snapshot_refused_without_snapshots(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``analyze --snapshot 5`` on a Parquet directory used to record snapshot 5."""
    table = _write_partitioned(tmp_path / "t", {"p=1": pa.table({"n": [1]})})
    _fails(capsys, ["analyze", str(table), "--snapshot", "5"], InvalidArgumentError,
           "without snapshots: drop --snapshot")
    assert not (table / "_lakestats").exists()


def test_unexpected_errors_are_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """An exception no layer translated (a bug) still prints one line, named by its type."""

    def broken(self: ls.LakestatsTable) -> list:
        raise ValueError("first\nsecond")

    monkeypatch.setattr(ls.LakestatsTable, "partitions", broken)
    assert cli.main(["partitions", "t"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "lakestats: error: unexpected ValueError: first (LAKESTATS_DEBUG=1 shows the traceback)"
    ]


# -- with the shared Spark session -------------------------------------------------------


def _typed_partitions() -> dict[str, pa.Table]:
    """Four partitions with repeated values of every ordered kind, some shared."""
    d = decimal.Decimal
    day = dt.date(2024, 1, 1)
    rows = {
        "p=0": ([1, 1, 2, None], [0.5, 0.5, float("nan"), -1.0], ["1.10", "1.10", "2.00", None],
                [0, 0, 1, 2], ["a", "a", "b", None]),
        "p=1": ([2, 2, 3, 3], [-1.0, 2.5, 2.5, None], ["2.00", "2.00", "3.30", "3.30"],
                [1, 1, 5, 5], ["b", "b", "c", "c"]),
        "p=2": ([7, 7, 7, 7], [9.0, 9.0, 9.0, 9.0], ["9.99", "9.99", "9.99", "9.99"],
                [9, 9, 9, 9], ["z", "z", "z", "z"]),
        "p=3": ([None, 1, 1, 3], [float("nan"), 0.5, 0.5, 2.5], [None, "1.10", "1.10", "3.30"],
                [0, 0, 5, 5], [None, "a", "a", "c"]),
    }
    out = {}
    for name, (i, f, dec, dates, s) in rows.items():
        out[name] = pa.table(
            {
                "i": pa.array(i, pa.int64()),
                "f": pa.array(f, pa.float64()),
                "dec": pa.array([None if v is None else d(v) for v in dec], pa.decimal128(9, 2)),
                "day": pa.array([day + dt.timedelta(days=n) for n in dates], pa.date32()),
                "s": pa.array(s, pa.string()),
            }
        )
    return out


@pytest.mark.spark
def test_partitions_containing_matches_duckdb(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Integer columns with repeated values raised TypeError: the table level records no
    holders for them. Every kind answers what DuckDB counts in the data."""
    table_dir = _write_partitioned(tmp_path / "t", _typed_partitions())
    table = ls.open_table(str(table_dir))
    table.analyze(spark=spark)
    con = duckdb.connect()
    source = f"read_parquet('{table_dir}/*/*.parquet', hive_partitioning=true)"
    probes = {
        "i": ["1", "2", "3", "7", "4"],
        "f": ["0.5", "2.5", "-1", "9", "NaN", "3.75"],
        "dec": ["1.10", "2.00", "3.30", "9.99", "5.00"],
        "day": ["2024-01-01", "2024-01-02", "2024-01-06", "2024-01-10", "2025-01-01"],
        "s": ["a", "b", "c", "z", "q"],
    }
    literal = {
        "i": "CAST(? AS BIGINT)",
        "f": "CAST(? AS DOUBLE)",
        "dec": "CAST(? AS DECIMAL(9, 2))",
        "day": "CAST(? AS DATE)",
        "s": "?",
    }
    for column, values in probes.items():
        for value in values:
            condition = (
                f"isnan({column})" if value == "NaN" else f"{column} = {literal[column]}"
            )
            params = [] if value == "NaN" else [value]
            expected = {
                f"p={p}": n
                # count_if, not WHERE: DuckDB prunes row groups by min/max for WHERE
                # isnan(...), and min/max ignore NaN (the NaN rows vanish)
                for p, n in con.execute(
                    f"SELECT p, count_if({condition}) AS n FROM {source} GROUP BY p "
                    "HAVING n > 0",
                    params,
                ).fetchall()
            }
            got = table.partitions_containing(column, value)
            assert {h.name: h.frequency for h in got} == expected, (column, value)
            assert cli.main(
                ["partitions-containing", str(table_dir), "--column", column, "--value", value,
                 "--json"]
            ) == 0
            capsys.readouterr()


@pytest.mark.spark
def test_partitions_containing_refuses_to_guess(
    spark, tmp_path: Path
) -> None:
    """All-distinct partitions store no frequencies: inside their [min, max] the answer is
    unknown, so an error, never an empty list; outside it the partition surely lacks it."""
    table_dir = _write_partitioned(
        tmp_path / "t",
        {"p=0": pa.table({"i": [1, 2, 3]}), "p=1": pa.table({"i": [10, 20, 30]})},
    )
    table = ls.open_table(str(table_dir))
    table.analyze(spark=spark)
    with pytest.raises(InvalidArgumentError, match="is not recorded for 1 partition"):
        table.partitions_containing("i", "2")
    assert len(table.partitions_containing("i", "5")) == 0  # between the partitions' ranges


@pytest.mark.spark
def test_conflicting_partition_schemas_name_file_and_column(
    spark, tmp_path: Path
) -> None:
    table_dir = _write_partitioned(
        tmp_path / "t",
        {"p=1": pa.table({"x": [1, 2, 3]}), "p=2": pa.table({"x": ["a", "b"]})},
    )
    root = tmp_path / "s"
    with pytest.raises(LakestatsError) as info:
        ls.open_table(str(table_dir), stats_root=str(root)).analyze(spark=spark)
    message = str(info.value)
    assert "\n" not in message
    assert f"data file {table_dir / 'p=2' / '0.parquet'} of partition p=2" in message
    assert "stores column 'x' as string, but the table's other files store it as int64" in (
        message
    )
    assert not (root / "latest.json").exists()


@pytest.mark.spark
def test_table_level_unknown_column(spark, tmp_path: Path, capsys) -> None:
    """``show --columns nope`` printed ``"columns": []`` and exited 0."""
    table_dir = _write_partitioned(
        tmp_path / "t", {"p=1": pa.table({"n": [1, 1]}), "p=2": pa.table({"n": [2]})}
    )
    ls.open_table(str(table_dir)).analyze(spark=spark)
    _fails(capsys, ["show", str(table_dir), "--columns", "n,nope", "--json"],
           ColumnNotFoundError, "column 'nope' has no statistics; analyzed columns are: n, p")
    _fails(capsys, ["frequencies", str(table_dir), "--column", "nope"],
           ColumnNotFoundError, "column 'nope'")
    _fails(capsys, ["histogram", str(table_dir), "--column", "nope"],
           ColumnNotFoundError, "column 'nope'")
    _fails(capsys, ["histogram", str(table_dir), "--column", "n", "--start", "5", "--stop",
                    "2"], InvalidArgumentError, "0 <= start <= stop")
    assert cli.main(["show", str(table_dir), "--columns", "n", "--json"]) == 0
    assert '"name": "n"' in capsys.readouterr().out


def test_boolean_literal_is_checked() -> None:
    """``--value maybe`` on a boolean column used to mean false (a wrong answer)."""
    from lakestats.stats.keys import parse_literal

    assert [parse_literal(t, pa.bool_()) for t in ("true", "Yes", "1", "false", "no", "0")] == [
        True, True, True, False, False, False
    ]
    with pytest.raises(ValueError, match="expected true or false"):
        parse_literal("maybe", pa.bool_())


@pytest.mark.parametrize(
    "where",
    [
        " OR ".join(f"n = {k}" for k in range(400)),
        "(" * 50 + "n = 2 OR s = 'z'" + ")" * 50,
        "NOT " * 500 + "n = 3",
        "NOT " * 501 + "n = 3",
    ],
    ids=["400 disjuncts", "50 parentheses", "500 NOTs", "501 NOTs"],
)
def test_planner_predicates_through_the_cli(
    sweep: dict[str, Path], capsys: pytest.CaptureFixture, where: str
) -> None:
    """``estimate`` and ``stats --where`` answer what a planner generates;
    the estimate's bounds hold DuckDB's count (exact where one column decides)."""
    import json

    table, root = str(sweep["T"]), str(sweep["S"])
    assert cli.main(["estimate", table, "--stats-root", root, "--where", where, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    files = str(sweep["T"] / "*" / "*.parquet")
    [(truth,)] = duckdb.execute(
        f"SELECT count(*) FROM read_parquet('{files}', hive_partitioning = true) WHERE {where}"
    ).fetchall()
    assert got["lower"] <= truth <= got["upper"]
    assert got["row_count"] == truth or not got["exact"]
    assert got["exact"] or "s =" in where
    args = ["stats", table, "--stats-root", root, "--columns", "n", "--where", where, "--json"]
    assert cli.main(args) == 0
    assert "Traceback" not in capsys.readouterr().err


# -- values typed after --value, and NaN in order statistics ---


def _typed_exact_table(base: Path) -> Path:
    """Two partitions of every scalar kind; ``f`` holds NaN (a fifth), +-inf and NULL."""
    import numpy as np

    rng = np.random.default_rng(29)
    for p in range(2):
        n = 500
        f = np.round(rng.normal(7.4, 3, n), 2)
        f[rng.random(n) < 0.2] = np.nan
        f[:3] = [np.inf, -np.inf, np.inf]
        table = pa.table(
            {
                "n": pa.array(rng.integers(-50, 50, n), pa.int64()),
                "f": pa.array(f, mask=rng.random(n) < 0.05),
                "day": pa.array(
                    [dt.date(2024, 1, 1) + dt.timedelta(days=int(x))
                     for x in rng.integers(0, 90, n)],
                    pa.date32(),
                ),
                "ts": pa.array(
                    [dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(x))
                     for x in rng.integers(0, 9000, n)],
                    pa.timestamp("us"),
                ),
                "d": pa.array(
                    [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-9999, 9999, n)],
                    pa.decimal128(10, 2),
                ),
                "bin": pa.array([bytes([int(x)]) for x in rng.integers(0, 20, n)], pa.binary()),
                "flag": pa.array(rng.random(n) < 0.3),
            }
        )
        (base / f"p={p}").mkdir(parents=True)
        pq.write_table(table, base / f"p={p}" / "0.parquet")
    return base


@pytest.fixture(scope="module")
def exact_typed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The typed table analyzed with ``--exact`` (ranks and quantiles exist)."""
    base = tmp_path_factory.mktemp("exact_typed")
    table = _typed_exact_table(base / "t")
    root = base / "s"
    done = run_cli(["analyze", str(table), "--stats-root", str(root), "--exact"], cwd=base)
    assert done.returncode == 0, done.stderr
    return {"T": table, "S": root, "cwd": base}


# (arguments after `rank {T} --stats-root {S}`, text the error line must contain)
VALUE_CASES = [
    ("--column n --value abc", "'abc' is not a value of column 'n' (int64) (not a number): "
     "write e.g. 42"),
    ("--column n --value ''", "'' is not a value of column 'n' (int64) (empty): write e.g. 42"),
    ("--column n --value 1.5", "(int64) (not an integer): write e.g. 42"),
    ("--column n --value 99999999999999999999", "(int64) (outside its range"),
    ("--column n --value 1e100000", "(int64) (outside its range"),
    ("--column f --value abc", "column 'f' (double) (not a number): write e.g. 1.5"),
    ("--column f --value 1e100000", "(double) (outside its range"),
    ("--column day --value 2024-13-45", "column 'day' (date32[day]): write e.g. 2024-01-31"),
    ("--column ts --value yesterday", "(timestamp[us]): write e.g. 2024-01-31 12:00:00"),
    ("--column d --value 1.234", "(decimal128(10, 2)) (over 2 digits after the point): "
     "write e.g. 111.55"),
    ("--column d --value 123456789", "(over 8 digits before the point)"),
    ("--column bin --value '!!not base64'", "column 'bin' (binary) (not base64): write e.g. "
     "aGVsbG8="),
    ("--column flag --value maybe", "column 'flag' (bool): write e.g. true"),
    ("--column f --value nan", "NaN has no rank"),
]


@pytest.mark.spark
def test_unparsable_values_are_one_line(exact_typed: dict[str, Path]) -> None:
    """Every value that does not parse as the column's type ends in one line naming the
    type and a valid example (was: unexpected ArrowInvalid / InvalidOperation / ValueError),
    for ``rank`` and ``partitions-containing`` alike; the root is unchanged."""
    from concurrent.futures import ThreadPoolExecutor

    before = tree_hashes(exact_typed["S"])
    lines = [
        f"{command} {{T}} --stats-root {{S}} {args}"
        for command in ("rank", "partitions-containing")
        for args, _ in VALUE_CASES
        if command == "rank" or "NaN" not in _
    ]
    with ThreadPoolExecutor(3) as pool:
        done = list(
            pool.map(lambda line: run_cli(_expand(line, exact_typed), exact_typed["cwd"]), lines)
        )
    texts = dict(VALUE_CASES)
    for line, result in zip(lines, done, strict=True):
        args = line.split("--stats-root {S} ", 1)[1]
        assert_one_error_line(result, texts[args])
    assert tree_hashes(exact_typed["S"]) == before


@pytest.mark.spark
def test_nan_rule_in_every_order_statistic(
    exact_typed: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """One rule (docs/limits.md): NaN is left out of percentiles, ranks, quantiles and
    histograms. Each is checked against DuckDB over the non-NaN values; ``show``'s stored
    percentiles equal ``quantile`` at the same p; ``rank --value -inf`` is a value."""
    import json

    table, root = str(exact_typed["T"]), str(exact_typed["S"])
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW t AS SELECT * FROM read_parquet('{table}/*/*.parquet', "
        "hive_partitioning = true)"
    )
    handle = ls.open_table(table, stats_root=root)
    [row] = handle.statistics(None, ["f"])
    [(nan_count,)] = con.execute("SELECT count(*) FILTER (isnan(f)) FROM t").fetchall()
    assert row["nan_count"] == nan_count > 100
    for p, name in [(0.01, "p01"), (0.25, "p25"), (0.5, "p50"), (0.95, "p95"), (0.99, "p99")]:
        [(want,)] = con.execute(
            f"SELECT quantile_disc(f, {p}) FROM t WHERE NOT isnan(f)"
        ).fetchall()
        assert handle.quantile("f", p).value == want == row[name], (p, name)
    for text, value in [("-inf", "'-inf'"), ("inf", "'inf'"), ("7.39", "7.39"),
                        (str(row["p50"]), str(row["p50"]))]:
        [(below, equal, above)] = con.execute(
            f"SELECT count(*) FILTER (f < {value}::DOUBLE), count(*) FILTER (f = {value}::DOUBLE),"
            f" count(*) FILTER (f > {value}::DOUBLE AND NOT isnan(f)) FROM t"
        ).fetchall()
        assert cli.main(["rank", table, "--stats-root", root, "--column", "f", "--value", text,
                         "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert (got["below"], got["equal"], got["above"]) == (below, equal, above), text
        assert got["total"] == below + equal + above
    assert cli.main(["histogram", table, "--stats-root", root, "--column", "f", "--json"]) == 0
    bins = json.loads(capsys.readouterr().out)["bins"]
    [(values,)] = con.execute("SELECT count(f) FILTER (NOT isnan(f)) FROM t").fetchall()
    assert sum(b["count"] for b in bins) == values
    # a negative value after --value of the other commands is a value too
    args = ["partitions-containing", table, "--stats-root", root, "--column", "f",
            "--value", "-inf", "--json"]
    assert cli.main(args) == 0
    assert len(json.loads(capsys.readouterr().out)["partitions"]) == 2
