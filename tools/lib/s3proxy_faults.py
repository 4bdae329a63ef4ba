"""Fault specs of tools/s3proxy: parsing, choosing the fault for a request, S3 error bodies.

The grammar is SPEC_HELP below (also printed by `tools/s3proxy --help`).

Pure logic, no I/O; not thread safe (the proxy runs one asyncio loop).
"""

from __future__ import annotations

import dataclasses
import random
import re
from xml.sax.saxutils import escape

SPEC_HELP = """\
A spec is `METHODS:TARGET:ACTION[:OPTION]...`:
  METHODS  `*`, or methods joined by `|` (GET, GET|HEAD); case-insensitive.
  TARGET   `*`, or a Python regex searched in the request target as sent (`/bucket/key?query`);
           anchor it with ^ and $. It may contain `:`; the fields after it are recognised as
           the known `name=value` words (and `reset`) from the right.
  ACTION   exactly one of
             status=CODE        answer CODE with an S3 XML error (500 InternalError, 503
                                SlowDown, ...; code=NAME picks another), without asking upstream
             reset              close the connection with a TCP RST before answering
             reset-after=BYTES  forward the head and BYTES of the body, then RST
             truncate=BYTES     forward the head (full Content-Length) and BYTES of the body,
                                then close normally (FIN)
             stall=SECONDS      stop sending for SECONDS after `after=BYTES` of the body
                                (default: half of Content-Length), then send the rest
             delay=MS           hold the response head back MS more milliseconds
  OPTIONs  count=N   inject at most N times (default: no limit)
           every=N   inject on the Nth, 2Nth, ... matching request (default: every one)
           prob=P    inject with probability P (0..1; --seed makes it reproducible)
           skip=N    let the first N matching requests through untouched
           code=NAME the S3 error code of status= (default from the status)
           after=BYTES  where stall= stops

At most one fault acts on a request: the first in the list whose selector fires. Every fault
whose matcher accepts a request counts it as matched, fired or not.
"""

ACTIONS = ("status", "reset", "reset-after", "truncate", "stall", "delay")
OPTIONS = ("count", "every", "prob", "skip", "code", "after")

# Default S3 error code and message per status, as AWS sends them.
S3_ERRORS = {
    400: ("BadRequest", "An error occurred when parsing the HTTP request."),
    403: ("AccessDenied", "Access Denied"),
    404: ("NoSuchKey", "The specified key does not exist."),
    429: ("SlowDown", "Please reduce your request rate."),
    500: ("InternalError", "We encountered an internal error. Please try again."),
    501: ("NotImplemented", "A header you provided implies functionality that is not "
                            "implemented."),
    502: ("BadGateway", "Bad gateway."),
    503: ("SlowDown", "Please reduce your request rate."),
    504: ("GatewayTimeout", "Gateway timeout."),
}

REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests",
           500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


class SpecError(ValueError):
    """A fault spec that does not parse; the message names the spec and the reason."""


@dataclasses.dataclass
class Fault:
    spec: str
    methods: frozenset[str] | None  # None: any
    target: re.Pattern | None       # None: any
    action: str                     # one of ACTIONS
    value: float = 0                # the action's number (status code, bytes, seconds, ms)
    count: int | None = None
    every: int = 1
    prob: float = 1.0
    skip: int = 0
    code: str | None = None
    after: int | None = None
    matched: int = 0
    injected: int = 0

    def matches(self, method: str, target: str) -> bool:
        return (self.methods is None or method.upper() in self.methods) and \
            (self.target is None or self.target.search(target) is not None)

    def fires(self, rng: random.Random) -> bool:
        """Called once per matching request, after `matched` counted it."""
        n = self.matched - self.skip
        if n <= 0 or (self.count is not None and self.injected >= self.count):
            return False
        if n % self.every != 0:
            return False
        return self.prob >= 1.0 or rng.random() < self.prob

    def to_json(self) -> dict:
        return {"spec": self.spec, "matched": self.matched, "injected": self.injected}


def _number(spec: str, name: str, text: str, kind=int, low: float = 0):
    try:
        v = kind(text)
    except ValueError:
        raise SpecError(f"fault {spec!r}: {name}={text!r} is not a number") from None
    if v < low:
        raise SpecError(f"fault {spec!r}: {name} must be at least {low}")
    return v


def parse_fault(spec: str) -> Fault:
    fields = spec.split(":")
    if len(fields) < 3:
        raise SpecError(f"fault {spec!r}: expected METHODS:TARGET:ACTION[:OPTION]...")
    words: dict[str, str] = {}
    end = len(fields)
    while end > 2:
        name, eq, value = fields[end - 1].partition("=")
        if name == "reset" and not eq:
            pass
        elif not eq or name not in ACTIONS + OPTIONS:
            break
        if name in words:
            raise SpecError(f"fault {spec!r}: {name} given twice")
        words[name] = value
        end -= 1
    methods_text, target_text = fields[0], ":".join(fields[1:end])
    actions = [a for a in ACTIONS if a in words]
    if len(actions) != 1:
        raise SpecError(f"fault {spec!r}: needs exactly one action of "
                        f"{', '.join(ACTIONS)} (got {', '.join(actions) or 'none'}; an unknown "
                        f"word ends up in the target regex)")
    action = actions[0]
    if methods_text in ("*", ""):
        methods = None
    else:
        methods = frozenset(m.strip().upper() for m in methods_text.split("|") if m.strip())
        if not all(re.fullmatch(r"[A-Z]+", m) for m in methods):
            raise SpecError(f"fault {spec!r}: bad methods {methods_text!r}")
    try:
        target = None if target_text in ("*", "") else re.compile(target_text)
    except re.error as e:
        raise SpecError(f"fault {spec!r}: bad target regex {target_text!r}: {e}") from None
    f = Fault(spec=spec, methods=methods, target=target, action=action)
    raw = words[action]
    if action == "status":
        f.value = _number(spec, "status", raw, int, 100)
        if f.value > 599:
            raise SpecError(f"fault {spec!r}: status must be 100..599")
    elif action in ("reset-after", "truncate"):
        f.value = _number(spec, action, raw, int)
    elif action in ("stall", "delay"):
        f.value = _number(spec, action, raw, float)
    if "count" in words:
        f.count = _number(spec, "count", words["count"], int)
    if "every" in words:
        f.every = _number(spec, "every", words["every"], int, 1)
    if "prob" in words:
        f.prob = _number(spec, "prob", words["prob"], float)
        if f.prob > 1:
            raise SpecError(f"fault {spec!r}: prob must be 0..1")
    if "skip" in words:
        f.skip = _number(spec, "skip", words["skip"], int)
    if "code" in words:
        if not re.fullmatch(r"[A-Za-z]+", words["code"]):
            raise SpecError(f"fault {spec!r}: code must be letters, like SlowDown")
        f.code = words["code"]
    if "after" in words:
        if action != "stall":
            raise SpecError(f"fault {spec!r}: after= goes with stall=")
        f.after = _number(spec, "after", words["after"], int)
    if f.code and action != "status":
        raise SpecError(f"fault {spec!r}: code= goes with status=")
    return f


class FaultSet:
    """The current list of faults, replaced as a whole (CLI at start, control channel later)."""

    def __init__(self, faults: list[Fault], seed: int | None = None) -> None:
        self.faults = faults
        self.rng = random.Random(seed)

    def replace(self, faults: list[Fault]) -> None:
        self.faults = faults

    def pick(self, method: str, target: str) -> Fault | None:
        chosen = None
        for f in self.faults:
            if f.matches(method, target):
                f.matched += 1
                if chosen is None and f.fires(self.rng):
                    f.injected += 1
                    chosen = f
        return chosen

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.faults]


def error_response(fault: Fault, method: str, target: str, request_id: str) -> bytes:
    """A whole HTTP/1.1 response as S3 sends errors: XML body (none for HEAD), keep-alive."""
    status = int(fault.value)
    code, message = S3_ERRORS.get(status, ("InternalError", "Injected error."))
    code = fault.code or code
    resource = target.split("?", 1)[0]
    body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            f"<Error><Code>{escape(code)}</Code><Message>{escape(message)} (injected by "
            f"s3proxy)</Message><Resource>{escape(resource)}</Resource>"
            f"<RequestId>{request_id}</RequestId></Error>").encode()
    head = (f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
            "Content-Type: application/xml\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"x-amz-request-id: {request_id}\r\n"
            "Server: s3proxy\r\n"
            "\r\n").encode()
    return head if method.upper() == "HEAD" else head + body
