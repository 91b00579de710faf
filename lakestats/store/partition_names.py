"""Which partition a name, a path, ``k=v[,k2=v2]`` or a dict of values names (every
``--partition``); stored names are never parsed, so no value can break another's lookup."""

from __future__ import annotations

from collections.abc import Iterator

from lakestats.errors import InvalidArgumentError, PartitionNotFoundError
from lakestats.stats import keys
from lakestats.store import layout, manifest


def find(
    parts: list[manifest.PartitionEntry], spec: str | dict[str, object]
) -> manifest.PartitionEntry:
    """The one partition of ``parts`` that ``spec`` names, in the first reading of it that
    names any; one line when it names none or several."""
    for matches in _candidates(parts, spec):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            paths = ", ".join(m.path for m in matches[:5])
            raise InvalidArgumentError(
                f"partition {spec!r} names {len(matches)} partitions ({paths}): pass the "
                "path `lakestats partitions --json` prints for the one you mean"
            )
    examples = ", ".join(p.name for p in parts[:3])
    raise PartitionNotFoundError(
        f"no partition {spec!r} in the statistics; partitions look like: {examples} "
        "(see `lakestats partitions`)"
    )


def _candidates(
    parts: list[manifest.PartitionEntry], spec: str | dict[str, object]
) -> Iterator[list[manifest.PartitionEntry]]:
    """The partitions ``spec`` could mean, most literal reading first: the exact name,
    the exact path, the path form decoded, then ``k=v,k2=v2`` split at commas."""
    if isinstance(spec, dict):
        yield [e for e in parts if _same_values(e, spec)]
        return
    yield [e for e in parts if e.name == spec]
    yield [e for e in parts if e.path == spec]
    if "/" in spec or "%" in spec:
        wanted = layout.parse_partition_dir(spec.strip("/"))
        yield [e for e in parts if e.key == wanted]
    pieces = spec.split(",")
    if all("=" in piece for piece in pieces):
        pairs = [piece.partition("=") for piece in pieces]
        wanted_dict = {name.strip(): value.strip() for name, _, value in pairs}
        yield [e for e in parts if _same_text(e, wanted_dict)]
    elif "=" not in spec:
        raise InvalidArgumentError(
            f"bad partition {spec!r}: write it as k=v or k=v,k2=v2 (or the name or path "
            "`lakestats partitions --json` prints)"
        )


def _same_text(entry: manifest.PartitionEntry, wanted: dict[str, str]) -> bool:
    key = dict(entry.key)
    if key.keys() != wanted.keys():
        return False
    return all(
        key[k] == v
        or str(keys.to_json(entry.values.get(k))) == v
        or (v in ("null", layout.NULL_VALUE) and entry.values.get(k, "") is None)
        for k, v in wanted.items()
    )


def _same_values(entry: manifest.PartitionEntry, wanted: dict[str, object]) -> bool:
    if set(entry.values) != set(wanted) and set(dict(entry.key)) != set(wanted):
        return False
    key = dict(entry.key)
    for name, value in wanted.items():
        have = entry.values.get(name, key.get(name))
        if value is None:
            if have is not None:
                return False
        elif not (have == value or str(value) in (str(have), key.get(name))):
            return False
    return True
