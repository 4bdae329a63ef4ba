"""HTTP/1.1 framing for tools/s3proxy: message heads, body lengths, pacing.

Enough of RFC 9112 to forward requests and responses one at a time on kept-alive connections:
a head ends at the first empty line; a body is framed by Transfer-Encoding: chunked, else
Content-Length, else (responses only) it runs until the connection closes. Responses to HEAD,
1xx, 204 and 304 have no body. Bodies are streamed as they arrive, raw bytes unchanged (chunk
framing included), so the proxy never changes what it forwards unless a fault says so.

It does not: pipeline, upgrade connections, or decode content. Not thread safe (asyncio).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import AsyncIterator

MAX_HEAD = 64 * 1024    # a bigger head is refused (S3 heads are well under 8 KiB)
BLOCK = 64 * 1024       # bytes read and written at a time


class ProtocolError(Exception):
    """The peer sent something that is not HTTP/1.1 we can frame."""


@dataclasses.dataclass
class Head:
    raw: bytes                       # the head as received, final CRLFCRLF included
    start: list[str]                 # request: method, target, version; response: version, status
    headers: list[tuple[str, str]]   # names as sent

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_tokens(self, name: str) -> set[str]:
        name = name.lower()
        return {t.strip().lower() for k, v in self.headers if k.lower() == name
                for t in v.split(",") if t.strip()}

    @property
    def method(self) -> str:
        return self.start[0]

    @property
    def target(self) -> str:
        return self.start[1]

    @property
    def status(self) -> int:
        return int(self.start[1])

    def keep_alive(self) -> bool:
        tokens = self.header_tokens("connection")
        version = self.start[0] if self.start[0].startswith("HTTP/") else self.start[2]
        if version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


async def read_head(reader: asyncio.StreamReader, request: bool) -> Head | None:
    """The next head, or None on a clean EOF before its first byte. Raises ProtocolError on a
    malformed or oversized head and asyncio.IncompleteReadError on EOF inside one."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"head longer than {MAX_HEAD} bytes") from None
    lines = raw[:-4].decode("latin-1").split("\r\n")
    while lines and lines[0] == "":  # tolerated stray CRLF between messages
        lines.pop(0)
    if not lines:
        raise ProtocolError("empty head")
    start = lines[0].split(" ", 2)
    if request:
        if len(start) != 3 or not start[2].startswith("HTTP/1."):
            raise ProtocolError(f"bad request line {lines[0][:100]!r}")
    else:
        if len(start) < 2 or not start[0].startswith("HTTP/1.") or not start[1].isdigit():
            raise ProtocolError(f"bad status line {lines[0][:100]!r}")
    headers = []
    for line in lines[1:]:
        if line[:1] in (" ", "\t") and headers:  # obsolete line folding
            k, v = headers[-1]
            headers[-1] = (k, v + " " + line.strip())
            continue
        k, colon, v = line.partition(":")
        if not colon or not k or k != k.strip():
            raise ProtocolError(f"bad header line {line[:100]!r}")
        headers.append((k, v.strip()))
    return Head(raw=raw, start=start, headers=headers)


def body_length(head: Head, request_method: str | None = None) -> int | None:
    """Bytes of body that follow `head`: a number, -1 for chunked, None for until-close.
    request_method is given for a response (HEAD's response has no body)."""
    if request_method is not None:
        status = head.status
        if request_method.upper() == "HEAD" or 100 <= status < 200 or status in (204, 304):
            return 0
    if "chunked" in head.header_tokens("transfer-encoding"):
        return -1
    cl = head.header("content-length")
    if cl is not None:
        if not cl.strip().isdigit():
            raise ProtocolError(f"bad Content-Length {cl!r}")
        return int(cl)
    return 0 if request_method is None else None


async def body_blocks(reader: asyncio.StreamReader, length: int | None) -> AsyncIterator[bytes]:
    """Yields the raw bytes of one body as they arrive (see body_length for `length`).
    Raises asyncio.IncompleteReadError when the peer closes inside a framed body."""
    if length is None:
        while block := await reader.read(BLOCK):
            yield block
    elif length >= 0:
        left = length
        while left > 0:
            block = await reader.read(min(BLOCK, left))
            if not block:
                raise asyncio.IncompleteReadError(b"", left)
            left -= len(block)
            yield block
    else:
        async for block in _chunked(reader):
            yield block


async def _chunked(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        line = await reader.readuntil(b"\r\n")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size {line[:40]!r}") from None
        yield line
        if size == 0:
            while True:  # trailers, then the empty line
                trailer = await reader.readuntil(b"\r\n")
                yield trailer
                if trailer == b"\r\n":
                    return
        left = size + 2  # data and its CRLF
        while left > 0:
            block = await reader.readexactly(min(BLOCK, left))
            left -= len(block)
            yield block


class Pacer:
    """Caps throughput at `rate` bytes per second for whoever shares it: take(n) returns when n
    more bytes may go. rate 0 means no cap. At most SLACK seconds' worth of bytes are saved up
    while idle: enough that a sleep that wakes late (asyncio on a busy machine wakes a
    millisecond or more late, against a third of a millisecond per 16 KiB block at 50 MB/s) is
    made up for, so the cap is the rate a connection gets, not an upper bound far above it."""

    SLACK = 0.02

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._next = 0.0  # monotonic time when the bytes granted so far have drained

    async def take(self, n: int) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        self._next = max(self._next, now - self.SLACK) + n / self.rate
        if self._next > now:
            await asyncio.sleep(self._next - now)

    def take_blocking(self, n: int) -> None:
        """take() for a thread that owns this pacer alone (a connection's, while it splices)."""
        if self.rate <= 0:
            return
        now = time.monotonic()
        self._next = max(self._next, now - self.SLACK) + n / self.rate
        if self._next > now:
            time.sleep(self._next - now)


# --------------------------------------------------------------------------------------------
# Zero-copy relay of large bodies

SPLICE_MIN = 256 * 1024  # bodies at least this long, unpaced and unfaulted, are spliced
SPLICE_STEP = 1 << 20    # bytes moved per splice() call
PACED_SPLICE_STEP = 128 * 1024  # under a per-connection cap: 2.6 ms at 50 MB/s, within SLACK
_splice_pool = None


def splice_pool():
    """Threads that move spliced bodies (blocking in poll and splice, outside the GIL); enough
    for every connection a client keeps busy at once."""
    global _splice_pool
    if _splice_pool is None:
        import concurrent.futures
        _splice_pool = concurrent.futures.ThreadPoolExecutor(256, thread_name_prefix="splice")
    return _splice_pool


def splice_exact(src_fd: int, dst_fd: int, count: int, timeout_s: float,
                 pacer: Pacer | None = None) -> int:
    """Moves exactly `count` bytes from socket src_fd to socket dst_fd through a pipe, in the
    kernel (no copy through this process). Both sockets stay non-blocking (they belong to
    asyncio transports); this waits in poll(). With a pacer (one this thread alone uses), bytes
    leave in steps of PACED_SPLICE_STEP, each when the pacer allows. Returns the bytes moved;
    raises asyncio.IncompleteReadError if src closes early, ConnectionResetError if dst goes
    away, TimeoutError if either side makes no progress for timeout_s."""
    import errno
    import os
    import select
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    flags = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
    step = PACED_SPLICE_STEP if pacer is not None and pacer.rate > 0 else SPLICE_STEP
    moved = 0
    in_pipe = 0
    try:
        src_poll, dst_poll = select.poll(), select.poll()
        src_poll.register(src_fd, select.POLLIN)
        dst_poll.register(dst_fd, select.POLLOUT)
        while moved < count:
            if in_pipe == 0 or moved + in_pipe < count:
                try:
                    n = os.splice(src_fd, w, min(step, count - moved - in_pipe), flags=flags)
                    if n == 0:
                        raise asyncio.IncompleteReadError(b"", count - moved - in_pipe)
                    in_pipe += n
                    if pacer is not None:
                        pacer.take_blocking(n)  # each byte once, before it goes out
                except BlockingIOError:
                    if in_pipe == 0:
                        if not src_poll.poll(timeout_s * 1000):
                            raise TimeoutError(f"upstream sent nothing for {timeout_s:.0f}s")
                        continue
            while in_pipe > 0:
                try:
                    n = os.splice(r, dst_fd, in_pipe, flags=flags)
                except BlockingIOError:
                    events = dst_poll.poll(timeout_s * 1000)
                    if not events:
                        raise TimeoutError(f"client took nothing for {timeout_s:.0f}s")
                    if events[0][1] & (select.POLLERR | select.POLLHUP):
                        raise ConnectionResetError("client went away")
                    continue
                except OSError as e:
                    if e.errno in (errno.EPIPE, errno.ECONNRESET):
                        raise ConnectionResetError("client went away") from e
                    raise
                in_pipe -= n
                moved += n
        return moved
    finally:
        os.close(r)
        os.close(w)
