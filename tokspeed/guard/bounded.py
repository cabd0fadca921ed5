"""Every network body tokspeed reads, read in chunks with a size cap and a total deadline.

``aread_body`` (an httpx streaming response, async) and ``read_body`` (an httpx streaming response, sync)
return at most ``cap`` bytes and give up when ``deadline_s`` has passed since they began, whatever the
other side does: a 300 MB ``/props``, a body sent one byte a second, a hub that ignores ``Range``. Never
``.read()`` / ``.content`` / ``.json()`` a whole body.

``with_deadline`` runs a blocking call that has no total deadline of its own (a library download whose
read timeout restarts with every byte) in a daemon thread and stops waiting for it after ``deadline_s``.
"""

from __future__ import annotations

import asyncio
import threading
import time

from ..errors import UserError


class BodyTooLarge(ValueError):
    pass


class BodyTooSlow(TimeoutError):
    pass


async def aread_body(resp, cap: int, deadline_s: float) -> bytes:
    """Up to ``cap`` bytes of ``resp`` (httpx, opened with ``stream=True``); BodyTooLarge past the cap,
    BodyTooSlow past the deadline."""
    buf = bytearray()

    async def pull():
        async for part in resp.aiter_bytes():
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
    for part in resp.iter_bytes(chunk):
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
