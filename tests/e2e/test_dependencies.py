"""Dependencies as a library declares them: ranges in pyproject.toml, exact versions in
requirements.lock (what `make setup` installs), and the lock inside every range."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        texts += [t for t in extra if not t.startswith("lakestats")]
    return [Requirement(t) for t in texts]


def _locked() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_pyproject_declares_ranges_not_pins() -> None:
    pinned = [str(r) for r in _declared() if any(s.operator == "==" for s in r.specifier)]
    assert not pinned, f"exact pins belong in requirements.lock: {pinned}"
    assert all(r.specifier for r in _declared()), "every dependency names its lowest version"


def test_the_lock_pins_every_dependency_inside_its_range() -> None:
    locked = _locked()
    outside = {
        str(r): locked.get(canonicalize_name(r.name))
        for r in _declared()
        if locked.get(canonicalize_name(r.name)) not in r.specifier
    }
    assert not outside, outside


def test_the_venv_runs_the_locked_versions() -> None:
    locked = _locked()
    differ = {}
    for name in ("pyspark", "pyarrow", "pandas", "numpy", "sqlglot", "deltalake", "duckdb"):
        installed = importlib.metadata.version(name)
        if installed != locked[canonicalize_name(name)]:
            differ[name] = (installed, locked[canonicalize_name(name)])
    assert not differ, f"run `make setup` again: {differ}"
