"""Access tokens of the service: made at random, stored only as their SHA-256, each with
the tables it may read.

A token is ``lst_`` and 32 random bytes (``secrets.token_bytes``) in URL-safe base64. The
tables file keeps ``sha256:<hex>`` of the whole token text, never the token. An unsalted,
fast hash is enough here: the secret has 256 bits of entropy, so neither a dictionary nor
a precomputed table can find it from its hash, while a slow password hash (bcrypt,
scrypt) would cost every request milliseconds for no gain. A presented token is hashed
once and compared with every stored hash by ``hmac.compare_digest`` (constant time, no
early exit), so the answer's timing says nothing about how close a guess was.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lakestats.errors import InvalidArgumentError

PREFIX = "lst_"
ALGORITHM = "sha256"
SECRET_BYTES = 32
ALL = "*"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a bare TOML key
TOKEN_OPTIONS = {"hash", "tables"}


@dataclass(frozen=True)
class Token:
    """One configured token: its name (for people: logs, the tables file), the hash of
    its secret, and the tables it may read (``None``: every served table)."""

    name: str
    digest: str
    tables: frozenset[str] | None

    def grants(self, table: str) -> bool:
        return self.tables is None or table in self.tables


def new_secret() -> str:
    """A fresh token: shown once to whoever asked for it, then kept only as its hash."""
    raw = secrets.token_bytes(SECRET_BYTES)
    return PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def check_name(name: str) -> str:
    """A token's name as the tables file keys it (a bare TOML key)."""
    if not NAME.match(name):
        raise InvalidArgumentError(
            f"token name {name!r}: use 1 to 64 letters, digits, '_' or '-'"
        )
    return name


def digest(secret: str) -> str:
    """What the tables file stores of ``secret``: ``sha256:<hex>``."""
    return f"{ALGORITHM}:{hashlib.sha256(secret.encode('utf-8')).hexdigest()}"


class TokenSet:
    """The configured tokens; empty: the service is open (no token asked for)."""

    def __init__(self, tokens: Iterable[Token] = ()) -> None:
        self.tokens = tuple(tokens)
        self._digests = [t.digest.encode("ascii") for t in self.tokens]

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def match(self, secret: str) -> Token | None:
        """The token whose hash ``secret`` has, else None; every stored hash is compared
        (constant time each), whichever matches."""
        presented = digest(secret).encode("ascii")
        found = None
        for token, stored in zip(self.tokens, self._digests, strict=True):
            if hmac.compare_digest(presented, stored):
                found = token
        return found


def parse_tokens(section: object, tables: Iterable[str], where: str) -> list[Token]:
    """The ``[tokens.NAME]`` entries of the tables file (``where`` names it in errors):
    ``hash = "sha256:<hex>"`` and ``tables = ["a", "b"]`` or ``"*"``; a grant naming a
    table the file does not serve is refused (a misspelt name would grant nothing)."""
    if section is None:
        return []
    if not isinstance(section, Mapping):
        raise InvalidArgumentError(f"{where}: tokens must be a table of [tokens.NAME] entries")
    served = set(tables)
    out: list[Token] = []
    seen: dict[str, str] = {}
    for name, spec in section.items():
        if not NAME.match(str(name)):
            raise InvalidArgumentError(
                f"{where}: token name {name!r}: use letters, digits, '_', '-' only"
            )
        if not isinstance(spec, Mapping):
            raise InvalidArgumentError(f"{where}: token {name!r} needs hash and tables")
        unknown = set(spec) - TOKEN_OPTIONS
        if unknown:
            raise InvalidArgumentError(
                f"{where}: token {name!r}: unknown option(s) {sorted(unknown)}; "
                f"allowed: {sorted(TOKEN_OPTIONS)}"
            )
        stored = spec.get("hash")
        if not isinstance(stored, str) or not DIGEST.match(stored):
            raise InvalidArgumentError(
                f"{where}: token {name!r}: hash must be sha256:<64 hex digits>, as "
                "`lakestats token` prints it (never the token itself)"
            )
        if stored in seen:
            raise InvalidArgumentError(
                f"{where}: tokens {seen[stored]!r} and {name!r} have the same hash"
            )
        seen[stored] = str(name)
        out.append(Token(str(name), stored, _grant(spec.get("tables"), str(name), served, where)))
    return out


def _grant(value: object, name: str, served: set[str], where: str) -> frozenset[str] | None:
    if value == ALL:
        return None
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) for v in value)
    ):
        raise InvalidArgumentError(
            f'{where}: token {name!r}: tables must be "*" or a non-empty list of table names'
        )
    unknown = sorted(set(value) - served)
    if unknown:
        raise InvalidArgumentError(
            f"{where}: token {name!r} grants {unknown}, which the file does not serve; "
            f"served: {sorted(served)}"
        )
    return frozenset(value)


def entry(name: str, secret: str, tables: list[str] | None) -> str:
    """The TOML entry of a new token for the tables file."""
    grant = '"*"' if tables is None else "[" + ", ".join(f'"{t}"' for t in tables) + "]"
    return f'[tokens.{name}]\nhash = "{digest(secret)}"\ntables = {grant}\n'
