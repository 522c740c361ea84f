"""Helpers for feeding one input to a streaming engine in many different chunkings.

A streaming tokenizer or rewriter must give the same answer however its input is cut into
``feed()`` calls.  Tests take one input, ask :func:`chunkings` for a list of ways to cut it,
feed each one to a fresh engine (:func:`feed_all` for tokenizers, :func:`feed_bytes` for
rewriter streams) and compare.  :func:`normalize_tokens` turns a token list into the form of
the html5lib tokenizer tests, which is independent of how text was split into pieces.

Everything here is deterministic: the random chunkings depend only on the seed and the input.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

__all__ = [
    "chunkings",
    "feed_all",
    "feed_bytes",
    "normalize_tokens",
    "random_chunking",
]

T_co = TypeVar("T_co", covariant=True)

#: Inputs up to this many bytes get every 2-way split; longer ones get a sample.
EXHAUSTIVE_SPLIT_LIMIT = 64


class TokenizerLike(Protocol[T_co]):
    """What :func:`feed_all` needs: ``feed(chunk)`` and ``close()``, each returning tokens."""

    def feed(self, chunk: bytes, /) -> Iterable[T_co]: ...

    def close(self) -> Iterable[T_co]: ...


class ByteStreamLike(Protocol):
    """What :func:`feed_bytes` needs: a sans-I/O stream, ``feed(chunk) -> bytes``, ``close()``."""

    def feed(self, chunk: bytes, /) -> bytes: ...

    def close(self) -> bytes: ...


def _rng(data: bytes, seed: int | str, salt: str) -> random.Random:
    """A generator seeded by ``seed`` and the input, so that different inputs get different
    (but reproducible) random cuts."""
    digest = hashlib.blake2b(data, digest_size=16, person=salt.encode()[:16]).hexdigest()
    return random.Random(f"{seed!r}:{digest}")


def cut_at(data: bytes, points: Iterable[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets (sorted, duplicates give empty chunks)."""
    chunks: list[bytes] = []
    prev = 0
    for point in sorted(points):
        chunks.append(data[prev:point])
        prev = point
    chunks.append(data[prev:])
    return chunks


def random_chunking(data: bytes, rng: random.Random, *, max_pieces: int = 12) -> list[bytes]:
    """One random multi-way chunking of ``data``.

    The number of cuts is random (at least one when ``data`` has two bytes or more), and now and
    then an empty chunk is inserted, since ``feed(b"")`` must be harmless too.
    """
    n = len(data)
    if n < 2:
        chunks = [data]
    else:
        k = rng.randint(1, min(n - 1, max_pieces - 1))
        chunks = cut_at(data, rng.sample(range(1, n), k))
    if rng.random() < 0.25:
        chunks.insert(rng.randint(0, len(chunks)), b"")
    return chunks


def chunkings(
    data: bytes,
    *,
    seed: int | str = 0,
    random_splits: int = 8,
    single_bytes: bool = True,
    two_way: bool = True,
    split_samples: int = 16,
    exhaustive_limit: int = EXHAUSTIVE_SPLIT_LIMIT,
) -> list[list[bytes]]:
    """Ways to cut ``data`` into chunks, each a list of byte strings whose concatenation is
    ``data``; duplicates removed, order stable.

    * the whole input as one chunk (always first);
    * every byte on its own (``single_bytes``);
    * every 2-way split ``[data[:i], data[i:]]`` when ``len(data) <= exhaustive_limit``,
      otherwise ``split_samples`` split points chosen at random (``two_way``);
    * ``random_splits`` random multi-way chunkings, some with an empty chunk.

    The random parts are deterministic: they depend only on ``seed`` and ``data``.
    """
    out: list[list[bytes]] = [[data]]
    n = len(data)
    if single_bytes:
        out.append([data[i : i + 1] for i in range(n)])
    if two_way and n >= 2:
        if n <= exhaustive_limit:
            points: Sequence[int] = range(1, n)
        else:
            rng = _rng(data, seed, "split")
            points = sorted(rng.sample(range(1, n), min(split_samples, n - 1)))
        out.extend([data[:i], data[i:]] for i in points)
    rng = _rng(data, seed, "random")
    out.extend(random_chunking(data, rng) for _ in range(random_splits))

    seen: set[tuple[bytes, ...]] = set()
    unique: list[list[bytes]] = []
    for chunks in out:
        key = tuple(chunks)
        if key not in seen:
            seen.add(key)
            unique.append(chunks)
    return unique


def feed_all(
    tokenizer_factory: Callable[[], TokenizerLike[T_co]], chunks: Iterable[bytes]
) -> list[T_co]:
    """Feed ``chunks`` to a fresh tokenizer from ``tokenizer_factory``, close it, and return
    every token it produced, in order."""
    tokenizer = tokenizer_factory()
    tokens: list[T_co] = []
    for chunk in chunks:
        tokens.extend(tokenizer.feed(chunk))
    tokens.extend(tokenizer.close())
    return tokens


def feed_bytes(stream_factory: Callable[[], ByteStreamLike], chunks: Iterable[bytes]) -> bytes:
    """Feed ``chunks`` to a fresh rewriter stream from ``stream_factory``, close it, and return
    the whole output."""
    stream = stream_factory()
    parts = [stream.feed(chunk) for chunk in chunks]
    parts.append(stream.close())
    return b"".join(parts)


def normalize_tokens(tokens: Iterable[Any], *, text_types: bool = False) -> list[list[Any]]:
    """Convert htmlstream tokens to the html5lib tokenizer-test format.

    ``["StartTag", name, attrs]`` (plus ``True`` when self-closing), ``["EndTag", name]``,
    ``["Comment", text]``, ``["Character", text]`` with adjacent Text pieces merged and empty
    text dropped, ``["DOCTYPE", name, public_id, system_id, not force_quirks]``; ``Unparsed``
    produces nothing.  With ``text_types=True`` a Character token also carries the text type
    (as a third item) and only pieces of the same type are merged.

    Tokens are recognised by class name, so this module does not import htmlstream.
    """
    out: list[list[Any]] = []
    text: list[str] = []
    text_type: Any = None

    def flush() -> None:
        if text:
            joined = "".join(text)
            if joined:
                item = ["Character", joined]
                if text_types:
                    item.append(text_type)
                out.append(item)
            text.clear()

    for tok in tokens:
        kind = type(tok).__name__
        if kind == "Text":
            if text_types and text and tok.text_type != text_type:
                flush()
            text_type = tok.text_type
            text.append(tok.text)
            continue
        if kind == "Unparsed":
            continue
        flush()
        if kind == "StartTag":
            item: list[Any] = ["StartTag", tok.name, dict(tok.attributes)]
            if tok.self_closing:
                item.append(True)
            out.append(item)
        elif kind == "EndTag":
            out.append(["EndTag", tok.name])
        elif kind == "Comment":
            out.append(["Comment", tok.text])
        elif kind == "Doctype":
            out.append(["DOCTYPE", tok.name, tok.public_id, tok.system_id, not tok.force_quirks])
        else:
            raise TypeError(f"unknown token type {kind!r}: {tok!r}")
    flush()
    return out
