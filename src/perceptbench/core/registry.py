"""A small generic registry: named plug-ins of one kind, registered by decorator.

The shape of lm-evaluation-harness's ``lm_eval/api/registry.py`` (one ``Registry[T]`` for
every kind of plug-in), without its lazy string entries: an entry is the object itself, so
every dependency is an ordinary import that ``scripts/check_imports.py`` sees."""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """``{name: T}`` in registration order.  ``kind`` names the plug-in kind in errors."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (ValueError if taken)."""
        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj
        return deco

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name``; ValueError naming the kind if the name is taken."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = obj

    def get(self, name: str) -> T:
        """The entry ``name``; KeyError naming the kind and the registered names otherwise."""
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"no {self.kind} {name!r}; registered: {', '.join(self._entries) or 'none'}") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[tuple[str, T]]:
        return iter(list(self._entries.items()))
