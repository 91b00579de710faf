"""The guide and the docs site: the README stays a short guide that cites only files a
clone has, the generated reference pages equal a fresh generation, and BENCHMARKS.md shows
every benchmark of ``bench/`` on its first screen."""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from lakestats.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
README_LIMIT = 15_360  # bytes: the repository hook's limit
FIRST_SCREEN = 50  # lines


def _generator() -> ModuleType:
    path = REPO / "docs" / "gen_reference.py"
    spec = importlib.util.spec_from_file_location("gen_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tracked_files() -> set[str]:
    """The files a fresh clone has (git's index; the working tree when not a checkout)."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, check=False
    )
    if done.returncode == 0 and done.stdout:
        return set(done.stdout.splitlines())
    return {str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "page", ["cli.md", "configuration.md", "analyze-options.md", "answers.md"]
)
def test_generated_reference_page_equals_a_fresh_generation(page: str) -> None:
    generator = _generator()
    committed = (REPO / "docs" / "reference" / page).read_text(encoding="utf-8")
    assert committed == generator.PAGES[page](), f"docs/reference/{page} is stale: make docs-gen"


def test_cli_reference_names_every_command_and_flag() -> None:
    page = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", page, flags=re.S | re.M))
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sections) == set(commands.choices)
    for name, sub in commands.choices.items():
        flags = {
            s
            for a in sub._actions
            if not isinstance(a, argparse._HelpAction)
            for s in a.option_strings
        }
        assert flags, name
        missing = [
            f for f in flags if f"`{f}" not in sections[name] and f", {f}" not in sections[name]
        ]
        assert not missing, (name, missing)


def test_readme_is_a_short_guide() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < README_LIMIT
    assert "make demo" in text and "make test" in text
    first_screen = "\n".join(text.splitlines()[:FIRST_SCREEN])
    for step in (
        "make demo",
        ".venv/bin/lakestats show",
        "lakestats serve",
        "analyze",
        "make test",
    ):
        assert step in first_screen, step
    assert "\n## Changelog\n" in text


def test_readme_cites_only_files_a_clone_has() -> None:
    text = README.read_text(encoding="utf-8")
    tracked = _tracked_files()
    directories = {str(Path(f).parent) for f in tracked} | {
        str(p) for f in tracked for p in Path(f).parents
    }
    links = re.findall(r"\]\(([^)#\s]+)", text)
    spans = [
        s
        for s in re.findall(r"`([^`\s]+)`", text)
        if re.fullmatch(r"(docs|bench|lakestats|tests)/[\w./-]*|[\w-]+\.(md|toml|py)", s)
    ]
    cited = [c for c in links + spans if "://" not in c]
    assert cited, "the README links to its docs"
    missing = [c for c in cited if c.rstrip("/") not in tracked | directories]
    assert not missing


def test_benchmarks_first_screen_has_every_benchmark() -> None:
    benches = {p.stem for p in (REPO / "bench").glob("*.py")} - {"__init__", "common"}
    first_screen = "\n".join(
        (REPO / "BENCHMARKS.md").read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    )
    missing = [b for b in sorted(benches) if f"`bench/{b}.py" not in first_screen]
    assert not missing
    assert "](docs/benchmarks-history.md)" in first_screen
