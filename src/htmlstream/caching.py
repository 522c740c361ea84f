"""A bounded, thread-safe cache of things compiled from a value: what makes a second
``Rewriter`` with the same rules, a second ``extract`` with the same fields, or a layer's
second rewriter for an equal configuration cost a dictionary look-up instead of a compilation.

:class:`CompileCache` maps a hashable *key* (compared by value: ``==`` and ``hash``) to what
its ``build`` function makes of it, built at the key's first use and shared by every later use
of an equal key::

    from htmlstream import CompileCache, Rewriter

    def build(config: MyConfig) -> Rewriter:       # MyConfig: a frozen dataclass
        return Rewriter().use(my_recipe(config))

    REWRITERS: CompileCache[MyConfig, Rewriter] = CompileCache(build, maxsize=64)

    def rewrite(html: str, config: MyConfig) -> str:
        return REWRITERS.get(config).rewrite(html)  # equal configs share one Rewriter

Since a :class:`~htmlstream.Rewriter` is shared safely by any number of threads (each
document gets its own stream), caching one by the value of what it was built from is how a
layer gives a per-call configuration (a sanitizer's policy, an ``extract`` field map) the cost
of a reused rewriter.  What is cached must not change after it is built (a rewriter that gets
no more rules), and ``build`` must depend on nothing but the key.

The design, for what it costs:

* **A hit is one dictionary look-up**, with no lock: the entry's "used" mark is set with a
  single store, atomic under the GIL.
* **Bounded.**  At most ``maxsize`` entries.  Inserting into a full cache evicts with the CLOCK
  algorithm (an approximation of least-recently-used): the oldest entries are looked at in
  insertion order, one used since it was last looked at gets a second chance (its mark
  cleared, moved to the newest end), the first unused one goes.  Eviction only forgets: what
  was handed out stays valid, and the next use of an evicted key builds it again.
* **One object per key.**  A miss builds outside the lock (builds of different keys run at
  the same time; a slow build blocks no hit), then inserts under the lock only if no other
  thread has inserted an equal key meanwhile; every caller gets the stored object.  Two
  threads missing the same key at once may both build it, but both get the first one stored.
* **Failures are not cached**: an exception of ``build`` propagates to its caller, and the
  next use of the key tries again.

The library's own caches are of this kind: parsed selectors (``parse_selector``, by text and
namespaces), compiled selector programs (by the rules' selectors, options and codec), and
``extract``'s plans (by the field map's value).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from htmlstream.errors import check_callable

__all__ = ["CompileCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class CompileCache(Generic[K, V]):
    """A bounded, thread-safe map from value keys to what ``build(key)`` makes of them, built
    at a key's first use (see the module docstring).

    Args:
        build: makes the value of a key; called outside any lock, at most once per key while
            the key stays in the cache (twice if two threads miss it at the same moment: the
            first result stored is the one both get).
        maxsize: the most entries kept (at least 1); a full cache evicts an entry not used
            lately (CLOCK) to take a new one.
    """

    __slots__ = ("_build", "_entries", "_lock", "_maxsize")

    def __init__(self, build: Callable[[K], V], *, maxsize: int = 256) -> None:
        check_callable(build, "CompileCache()", "build", "a callable: build(key) -> value")
        if type(maxsize) is not int:
            raise TypeError(f"CompileCache(): maxsize must be an int >= 1, not "
                            f"{type(maxsize).__name__}")
        if maxsize < 1:
            raise ValueError(f"maxsize must be an int >= 1, not {maxsize!r}")
        self._build = build
        self._maxsize = maxsize
        # key -> [value, used]: insertion order is the CLOCK's hand order (oldest first)
        self._entries: dict[K, list[object]] = {}
        self._lock = threading.Lock()

    @property
    def maxsize(self) -> int:
        """The most entries the cache keeps."""
        return self._maxsize

    def get(self, key: K) -> V:
        """The value for ``key`` (built now if the cache has no equal key).  Raises what
        ``build`` raises (nothing is cached then), and ``TypeError`` for an unhashable key."""
        entry = self._entries.get(key)
        if entry is not None:
            entry[1] = True
            return entry[0]  # type: ignore[return-value]
        value = self._build(key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:       # (another thread stored it first: share that one)
                entry[1] = True
                return entry[0]  # type: ignore[return-value]
            if len(self._entries) >= self._maxsize:
                self._evict()
            self._entries[key] = [value, False]
        return value

    def _evict(self) -> None:
        """Forget one entry (lock held): the oldest not used since the hand last passed it."""
        entries = self._entries
        # (one full turn gives every entry its second chance, so the next is unused, unless
        # hits in other threads marked it again meanwhile: then the oldest goes anyway, and
        # the bound holds)
        for _ in range(len(entries)):
            key = next(iter(entries))
            entry = entries.pop(key)
            if not entry[1]:
                return
            entry[1] = False
            entries[key] = entry
        del entries[next(iter(entries))]

    def __contains__(self, key: object) -> bool:
        """Whether an equal key is cached now (its use is not counted)."""
        return key in self._entries

    def __len__(self) -> int:
        """How many entries are cached now."""
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry (what was handed out stays valid)."""
        with self._lock:
            self._entries.clear()

    def __repr__(self) -> str:
        return f"<CompileCache {len(self._entries)}/{self._maxsize} of {self._build!r}>"
