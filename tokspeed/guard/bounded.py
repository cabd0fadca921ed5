"""Every network body tokspeed reads, read in chunks with a size cap and a total deadline.

``aread_body`` (an httpx streaming response, async) and ``read_body`` (an httpx streaming response, sync)
return at most ``cap`` bytes and give up when ``deadline_s`` has passed since they began, whatever the
other side does: a 300 MB ``/props``, a body sent one byte a second, a hub that ignores ``Range``. Never
``.read()`` / ``.content`` / ``.json()`` a whole body.

``abody_chunks`` is the one way a streamed body is read: the raw bytes, inflated here (gzip, deflate) in
pieces of at most ``PIECE_BYTES`` and at most ``MAX_INFLATED_BYTES`` in all -- a 47 KB gzip body that inflates
to 48 MiB of blank lines is never one 48 MiB string, and a bomb stops at the cap. Both readers above use it.

``with_deadline`` runs a blocking call that has no total deadline of its own (a library download whose
read timeout restarts with every byte) in a daemon thread and stops waiting for it after ``deadline_s``.
"""

from __future__ import annotations

import asyncio
import threading
import time
import zlib

from ..errors import UserError


PIECE_BYTES = 64 * 1024             # what one inflate step may produce: a chunk of a stream, never the whole body
MAX_INFLATED_BYTES = 256 * 2**20    # one inflated body: a 100,000-token answer streamed as SSE is ~30 MB
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class BodyTooLarge(ValueError):
    pass


def _decoder(resp):
    enc = (resp.headers.get("content-encoding") or "identity").strip().lower()
    if enc in ("", "identity"):
        return None
    if enc not in _WBITS:
        raise BodyTooLarge(f"content-encoding {enc[:40]!r} is not one tokspeed reads (gzip, deflate)")
    return zlib.decompressobj(_WBITS[enc])


def _inflate(d, data: bytes, state: list):
    """Pieces of ``data`` inflated by ``d``, each at most PIECE_BYTES; ``state[0]`` counts the bytes out."""
    while data:
        try:
            piece = d.decompress(data, PIECE_BYTES)
        except zlib.error as e:
            raise BodyTooLarge(f"a compressed body that does not inflate ({e})") from None
        state[0] += len(piece)
        if state[0] > MAX_INFLATED_BYTES:
            raise BodyTooLarge(f"a compressed body inflating past {MAX_INFLATED_BYTES // 2**20} MiB")
        if piece:
            yield piece
        data = d.unconsumed_tail
        if not piece and not data:
            break


async def abody_chunks(resp):
    """The body of ``resp`` (httpx, ``stream=True``) in pieces, inflated with an output cap (module doc)."""
    d = _decoder(resp)
    state = [0]
    async for raw in resp.aiter_raw():
        if d is None:
            yield raw
        else:
            for piece in _inflate(d, raw, state):
                yield piece


def body_chunks(resp, chunk: int = 65536):
    """The sync twin of ``abody_chunks``."""
    d = _decoder(resp)
    state = [0]
    for raw in resp.iter_raw(chunk):
        if d is None:
            yield raw
        else:
            yield from _inflate(d, raw, state)


class BodyTooSlow(TimeoutError):
    pass


async def aread_body(resp, cap: int, deadline_s: float) -> bytes:
    """Up to ``cap`` bytes of ``resp`` (httpx, opened with ``stream=True``); BodyTooLarge past the cap,
    BodyTooSlow past the deadline."""
    buf = bytearray()

    async def pull():
        async for part in abody_chunks(resp):
            buf.extend(part)
            if len(buf) > cap:
                raise BodyTooLarge(f"body larger than {cap:,} bytes")

    try:
        await asyncio.wait_for(pull(), deadline_s)
    except asyncio.TimeoutError:
        raise BodyTooSlow(f"body not complete within {deadline_s:g} s") from None
    return bytes(buf)


def read_body(resp, cap: int, deadline_s: float, keep_first: bool = False, chunk: int = 65536) -> bytes:
    """The sync twin of ``aread_body``. The deadline is checked after every chunk; the transport's read
    timeout bounds the wait for one chunk. ``keep_first``: a longer body is not an error, its first ``cap``
    bytes are the answer (a server that ignores ``Range`` sends the whole file)."""
    buf = bytearray()
    end = time.monotonic() + deadline_s
    for part in body_chunks(resp, chunk):
        buf.extend(part)
        if len(buf) >= cap and keep_first:
            return bytes(buf[:cap])
        if len(buf) > cap:
            raise BodyTooLarge(f"body larger than {cap:,} bytes")
        if time.monotonic() > end:
            raise BodyTooSlow(f"body not complete within {deadline_s:g} s")
    return bytes(buf)


def with_deadline(fn, deadline_s: float, what: str):
    """``fn()`` or UserError after ``deadline_s`` (the call is left to finish on its own daemon thread)."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:      # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, daemon=True, name="tokspeed-deadline")
    t.start()
    t.join(deadline_s)
    if t.is_alive():
        raise UserError(f"{what}: no complete answer within {deadline_s:g} s", "is the server overloaded or stalling?")
    if "error" in box:
        raise box["error"]
    return box.get("value")
