#!/usr/bin/env python3
"""moto's S3 server, with SigV4 checked against the request as the client sent it.

Why: moto 5.2 verifies a signature against a URL rebuilt from werkzeug's *decoded* URL, so a
correctly signed request whose query or key holds an encoded character ("/" in prefix=dir/ or
delimiter=/; %, +, =, *, ( or non-ASCII in a key) fails with SignatureDoesNotMatch. Every
directory listing an S3 filesystem makes has delimiter=/, so stock moto with authentication on
refuses correct clients (botocore included).

What this changes: only the canonical URI and canonical query string that moto hands to botocore's
signer. They are rebuilt from the raw request target (werkzeug's RAW_URI) the way AWS does:
percent-decode, then encode every byte outside A-Z a-z 0-9 - _ . ~ (and "/" in the path), and sort
the query by key then value. Access keys, secrets, signed headers, the payload hash, the date and
IAM policies are still moto's own checks, so a wrong secret or a tampered request is refused.

It also lets AssumeRoleWithWebIdentity through unsigned when authentication is on, as AWS does
(the web identity token is the proof; moto 5.2 answers 500 to any unsigned request once it checks
signatures). Every other action is still checked.

Usage: moto_server.py -H 127.0.0.1 -p PORT  (authentication follows INITIAL_NO_AUTH_ACTION_COUNT)
"""

import argparse
import signal
import sys
import threading
from urllib.parse import quote, unquote_to_bytes

_request = threading.local()  # the raw request target of the request this thread serves


def canonical_target(raw: bytes) -> str:
    """'/bucket/k%20ey?b=2&a=x%2Fy' as sent -> canonical '/bucket/k%20ey?a=x%2Fy&b=2'."""
    path, _, query = raw.partition(b"?")
    canonical_path = quote(unquote_to_bytes(path), safe="/~")
    pairs = []
    for pair in query.split(b"&") if query else []:
        if not pair:
            continue
        key, _, value = pair.partition(b"=")
        pairs.append((quote(unquote_to_bytes(key), safe="~"),
                      quote(unquote_to_bytes(value), safe="~")))
    pairs.sort()
    canonical_query = "&".join(f"{k}={v}" for k, v in pairs)
    return canonical_path + ("?" + canonical_query if canonical_query else "")


def _install_patch() -> None:
    from moto.iam import access_control

    original = access_control.IAMRequestBase._create_aws_request

    def create_aws_request(self):
        raw = getattr(_request, "target", None)
        if raw is not None:
            self._path = canonical_target(raw)
        return original(self)

    access_control.IAMRequestBase._create_aws_request = create_aws_request

    from moto.core.authorization import ActionAuthenticatorMixin

    original_auth = ActionAuthenticatorMixin._authenticate_and_authorize_normal_action

    def authenticate(self, resource: str = "*"):
        if "Authorization" not in self.headers and \
                self._get_action() in ("AssumeRoleWithWebIdentity", "AssumeRoleWithSAML"):
            return None
        return original_auth(self, resource)

    ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = authenticate


class _KeepRawTarget:
    """WSGI middleware: remember the request target exactly as it came off the wire."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        # werkzeug passes the target as a latin-1 string of the original bytes.
        _request.target = raw.encode("latin-1") if raw is not None else None
        try:
            return self.app(environ, start_response)
        finally:
            _request.target = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple

    _install_patch()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, _KeepRawTarget(app), threaded=True)


if __name__ == "__main__":
    main()
