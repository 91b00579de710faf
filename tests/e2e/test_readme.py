"""The Python examples of the README and of the docs pages run as written.

The docs pages' examples were the README's before the reference moved into ``docs/``; they
run in one test with the README's, in the order of ``PAGES`` (the user-defined statistic
one registers is removed afterwards).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = ("python-api.md", "statistics.md", "samples.md", "spark.md", "column-groups.md")


def _blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_every_page_with_python_examples_is_run() -> None:
    with_examples = {p.name for p in (REPO / "docs").rglob("*.md") if _blocks(p)}
    assert with_examples == set(PAGES)


@pytest.mark.spark
def test_readme_and_docs_python_examples_run(spark) -> None:
    from lakestats.stats.registry import unregister_statistic

    examples = [(README, block) for block in _blocks(README)]
    assert len(examples) >= 1
    examples += [(REPO / "docs" / page, block) for page in PAGES for block in _blocks(
        REPO / "docs" / page)]
    assert len(examples) >= 6
    try:
        for path, block in examples:
            exec(compile(block, str(path), "exec"), {})
    finally:
        unregister_statistic("negative_count")
