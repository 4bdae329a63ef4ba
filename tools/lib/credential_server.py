#!/usr/bin/env python3
"""A loopback stand-in for the credential endpoints of EC2 and containers, for warmfs's tests.

What it serves (one server, on 127.0.0.1 only):
- IMDSv2: PUT /latest/api/token (needs X-aws-ec2-metadata-token-ttl-seconds) returns a session
  token; GET /latest/meta-data/iam/security-credentials/ (needs that token, else 401) returns the
  role name; GET .../ROLE returns the credentials JSON.
- The container endpoint (ECS, EKS Pod Identity): GET /container-credentials, which needs
  "Authorization: <container_token>" (else 401) and returns the credentials JSON.
- A fake STS: POST / answers an <ErrorResponse> InvalidIdentityToken 403, to show how warmfs
  reports a failing STS call.

The credentials are real ones from moto's STS (AssumeRole with the harness's admin keys), fetched
anew for every request (so they rotate), but handed out with an Expiration `lifetime` seconds
ahead: moto keeps accepting them after that, so a warmfs that signs with them past their
Expiration is not caught by moto, but warmfs must refresh before it anyway.

set_failing(True) makes every credentials request answer 500 (tokens still work), as an endpoint
that breaks. Counters: served (credential documents handed out), failed (500s given).
"""

from __future__ import annotations

import datetime
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CredentialServer:
    def __init__(self, sts_client, role_arn: str, lifetime: float = 6.0,
                 container_token: str = "container-token-1", role_name: str = "warmfs-node"):
        self.sts = sts_client
        self.role_arn = role_arn
        self.lifetime = lifetime
        self.container_token = container_token
        self.role_name = role_name
        self._lock = threading.Lock()  # protects the fields below
        self.served = 0
        self.failed = 0
        self.failing = False
        self.tokens: set[str] = set()
        self.requests: list[str] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> "CredentialServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: str, ctype: str = "application/json") -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self):
                server._note(f"PUT {self.path}")
                if self.path != "/latest/api/token":
                    return self._send(404, "")
                if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    return self._send(400, "missing ttl")
                token = secrets.token_hex(16)
                with server._lock:
                    server.tokens.add(token)
                self._send(200, token, "text/plain")

            def do_GET(self):
                server._note(f"GET {self.path}")
                base = "/latest/meta-data/iam/security-credentials/"
                if self.path.startswith(base):
                    with server._lock:
                        ok = self.headers.get("X-aws-ec2-metadata-token") in server.tokens
                    if not ok:
                        return self._send(401, "")
                    role = self.path[len(base):]
                    if role == "":
                        return self._send(200, server.role_name, "text/plain")
                    if role != server.role_name:
                        return self._send(404, "")
                    return server._credentials(self)
                if self.path == "/container-credentials":
                    if self.headers.get("Authorization") != server.container_token:
                        return self._send(401, json.dumps({"Message": "bad token"}))
                    return server._credentials(self)
                self._send(404, "")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                server._note(f"POST {self.path} {body.split('&')[0]}")
                self._send(403, "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                                "<Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                                "<Message>Couldn't retrieve verification key from your identity "
                                "provider</Message></Error><RequestId>r1</RequestId></ErrorResponse>",
                           "text/xml")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def set_failing(self, failing: bool) -> None:
        with self._lock:
            self.failing = failing

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.served, self.failed

    def _note(self, line: str) -> None:
        with self._lock:
            self.requests.append(line)

    def _credentials(self, handler) -> None:
        with self._lock:
            failing = self.failing
        if failing:
            with self._lock:
                self.failed += 1
            return handler._send(500, json.dumps({"Code": "InternalError", "Message": "broken"}))
        c = self.sts.assume_role(RoleArn=self.role_arn, RoleSessionName="warmfs-test-node",
                                 DurationSeconds=900)["Credentials"]
        expires = datetime.datetime.now(datetime.timezone.utc) + \
            datetime.timedelta(seconds=self.lifetime)
        doc = {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": c["AccessKeyId"],
               "SecretAccessKey": c["SecretAccessKey"], "Token": c["SessionToken"],
               "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
               "LastUpdated": datetime.datetime.now(datetime.timezone.utc).strftime(
                   "%Y-%m-%dT%H:%M:%SZ")}
        with self._lock:
            self.served += 1
        handler._send(200, json.dumps(doc))
