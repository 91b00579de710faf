"""``lakestats.config``: the environment, then the config file, then arguments; bad
settings as one line; every variable in the README's table; no other module reading the
environment for a setting; ``--spark-conf`` (and the file's ``[spark.conf]``) reaching the
SparkSession a command starts (a subprocess, whose session's conf is read back)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakestats import cli, config
from lakestats.errors import InvalidArgumentError

REPO = Path(__file__).resolve().parents[2]


def _toml(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_environment_then_file_then_arguments(tmp_path: Path) -> None:
    file = _toml(
        tmp_path / "lakestats.toml",
        """
debug = true
[spark]
master = "spark://file:7077"
[spark.conf]
"spark.a" = "from-file"
"spark.b" = 2
[catalog]
warehouse = "/file/warehouse"
[s3]
region = "file-region"
[exact]
threshold = 10
""",
    )
    environ = {
        "LAKESTATS_SPARK_MASTER": "spark://env:7077",
        "LAKESTATS_DRIVER_MEMORY": "1g",
        "LAKESTATS_WAREHOUSE": "/env/warehouse",
        "AWS_REGION": "env-region",
        "AWS_ENDPOINT_URL": "http://env:9000",
        "LAKESTATS_EXACT_THRESHOLD": "5",
        "LAKESTATS_EXACT_NEAR_UNIQUE": "0.5",
        "LAKESTATS_CONFIG": file,
    }
    only_env = config.load({k: v for k, v in environ.items() if k != "LAKESTATS_CONFIG"})
    assert (only_env.spark_master, only_env.driver_memory, only_env.warehouse) == (
        "spark://env:7077", "1g", "/env/warehouse"
    )
    assert (only_env.s3_region, only_env.exact_threshold, only_env.debug) == (
        "env-region", 5, False
    )
    with_file = config.load(environ)
    assert with_file.spark_master == "spark://file:7077"  # the file over the environment
    assert with_file.driver_memory == "1g"  # the file does not set it: the environment's
    assert (with_file.warehouse, with_file.s3_region) == ("/file/warehouse", "file-region")
    assert with_file.s3_endpoint_url == "http://env:9000"
    assert (with_file.exact_threshold, with_file.exact_near_unique) == (10, 0.5)
    assert with_file.debug is True
    assert with_file.spark_conf_dict == {"spark.a": "from-file", "spark.b": "2"}
    args = config.load(
        environ,
        {"spark_master": "local[3]", "spark_conf": (("spark.b", "from-args"),),
         "warehouse": None},
    )
    assert args.spark_master == "local[3]"  # arguments over both
    assert args.warehouse == "/file/warehouse"  # None: not given
    assert args.spark_conf_dict == {"spark.a": "from-file", "spark.b": "from-args"}


def test_a_nearer_master_drops_a_remote_from_further_away(tmp_path: Path) -> None:
    environ = {"LAKESTATS_SPARK_REMOTE": "sc://env:1"}
    assert config.load(environ).spark_remote == "sc://env:1"
    file = _toml(tmp_path / "c.toml", '[spark]\nmaster = "local[2]"\n')
    chosen = config.load({**environ, "LAKESTATS_CONFIG": file})
    assert (chosen.spark_master, chosen.spark_remote) == ("local[2]", None)
    both = config.load({**environ, "LAKESTATS_SPARK_MASTER": "local[1]"})
    assert (both.spark_master, both.spark_remote) == ("local[1]", "sc://env:1")  # remote wins


def test_the_cli_builds_settings_from_its_flags(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("LAKESTATS_CONFIG", raising=False)
    file = _toml(tmp_path / "c.toml", '[spark.conf]\n"spark.x" = "file"\n"spark.y" = "file"\n')
    args = cli.build_parser().parse_args(
        ["--config", file, "--spark-conf", "spark.y=flag", "--spark-conf", "spark.z=a=b",
         "analyze", "t", "--master", "local[1]", "--catalog", "prod"]
    )
    chosen = cli.settings_of(args)
    assert chosen.spark_conf_dict == {"spark.x": "file", "spark.y": "flag", "spark.z": "a=b"}
    assert (chosen.spark_master, chosen.catalog, chosen.config_file) == ("local[1]", "prod", file)


@pytest.mark.parametrize(
    ("environ", "file_text", "message"),
    [
        ({"LAKESTATS_EXACT_THRESHOLD": "many"}, None,
         "LAKESTATS_EXACT_THRESHOLD must be a whole number, got 'many'"),
        ({"LAKESTATS_EXACT_NEAR_UNIQUE": "most"}, None,
         "LAKESTATS_EXACT_NEAR_UNIQUE must be a number, got 'most'"),
        ({}, '[spark]\nmastr = "x"\n', "unknown setting 'spark.mastr' in config file"),
        ({}, "debug = \n", "is not valid TOML"),
        ({}, "[exact]\nthreshold = \"x\"\n", "exact.threshold in "),
        ({}, "[spark]\nconf = 3\n", "spark.conf in "),
    ],
)
def test_bad_settings_are_one_line(
    tmp_path: Path, environ: dict, file_text: str | None, message: str
) -> None:
    if file_text is not None:
        environ = {**environ, "LAKESTATS_CONFIG": _toml(tmp_path / "bad.toml", file_text)}
    with pytest.raises(InvalidArgumentError, match=re.escape(message)) as info:
        config.load(environ)
    assert "\n" not in str(info.value)


def test_bad_settings_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["--spark-conf", "novalue", "history", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lakestats: error: --spark-conf expects KEY=VALUE such as spark.executor.memory=8g, "
        "got 'novalue'"
    ]
    missing = tmp_path / "missing.toml"
    assert cli.main(["--config", str(missing), "history", str(tmp_path)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"lakestats: error: config file {missing} cannot be read")


def _settings_rows() -> list[str]:
    """The settings tables: the README's Configuration section, and the "Settings" section
    of the reference pages under docs/ (e.g. docs/deploy.md's S3 and service limits)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    sections = [readme.split("### Configuration", 1)[1].split("\n## ", 1)[0]] if (
        "### Configuration" in readme
    ) else []
    for page in sorted((REPO / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        sections += [part.split("\n## ", 1)[0] for part in text.split("## Settings")[1:]]
    return [
        line for section in sections for line in section.splitlines()
        if line.startswith(("| `", "| (none)"))
    ]


def test_every_variable_is_in_the_readme_table() -> None:
    rows = _settings_rows()
    documented = {v for row in rows for v in re.findall(r"`((?:LAKESTATS|AWS)_[A-Z0-9_]+)`",
                                                        row.split("|")[1])}
    assert documented == set(config.Settings().env_variables())
    keys = {k for row in rows for k in re.findall(r"`([a-z0-9_.]+)`", row.split("|")[2])}
    files = {f.metadata["file"] for f in config.dataclasses.fields(config.Settings)}
    assert keys == files - {None}


def test_no_module_but_config_reads_the_environment_for_a_setting() -> None:
    read = re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=)")
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in (REPO / "lakestats").rglob("*.py")
        if path.name != "config.py" or path.parent.name != "lakestats"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if read.search(line)
    ]
    assert offenders == []


_PROBE = """
import sys
from lakestats import cli
code = cli.main(sys.argv[1:])
from pyspark.sql import SparkSession
session = SparkSession.getActiveSession()
conf = session.sparkContext.getConf()
print("PROBE " + " ".join([str(code), session.conf.get("spark.sql.shuffle.partitions"),
      session.conf.get("spark.lakestats.probe"), conf.get("spark.lakestats.fromfile"),
      conf.get("spark.driver.memory")]))
"""


@pytest.mark.spark
def test_spark_conf_reaches_the_session_a_command_starts(tmp_path: Path) -> None:
    table = tmp_path / "t"
    table.mkdir()
    pq.write_table(pa.table({"n": [1, 2, 3]}), table / "0.parquet")
    file = _toml(
        tmp_path / "c.toml",
        '[spark]\ndriver_memory = "1g"\n[spark.conf]\n"spark.lakestats.fromfile" = "yes"\n',
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAKESTATS_SPARK_MASTER": "local[1]",
           "LAKESTATS_CONFIG": file}
    env.pop("LAKESTATS_SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "--spark-conf", "spark.sql.shuffle.partitions=3",
         "--spark-conf", "spark.lakestats.probe=on", "analyze", str(table), "--json"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "PROBE 0 3 on yes 1g"  # ours (8 shuffle partitions) overridden
    summary = json.loads("\n".join(lines[:-1]))
    assert summary["row_count"] == 3
