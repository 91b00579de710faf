"""A module imported on its first attribute access, so a lookup loads only what it uses.

``lakestats.answers`` defines two dozen frozen dataclasses whose generated methods take
about 18 ms to compile at import: a tenth of a whole ``lakestats show`` process. The facade
names it through this proxy, so a lookup that builds no answer object never pays for it.
``importlib.import_module`` holds the import lock, so the first use from several threads
at once is safe (``importlib.util.LazyLoader`` is not, before Python 3.12).
"""

from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for the module ``name`` until an attribute is read, then is that module's."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> object:
        module: ModuleType = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"
