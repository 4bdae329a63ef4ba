#!/usr/bin/env python3
"""Expected SigV4 signatures for S3 requests, as botocore computes them.

Run once (python3 with botocore installed) to regenerate cases.json; the C++ unit test
(tests/unit/objstore/sigv4_botocore_test.cc) reads the JSON, so tests never need python.

    python3 tests/data/botocore_sigv4/generate.py > tests/data/botocore_sigv4/cases.json

Each case is an S3 request described the way warmfs builds one: the raw key, the
percent-encoded path (each segment encoded once, '/' kept), decoded query parameters, the
headers sent (before signing) and the payload hash. botocore.auth.S3SigV4Auth signs it at a
fixed instant; the case records botocore's canonical request, string to sign and
Authorization header.
"""
import datetime
import json
import sys
from unittest import mock
from urllib.parse import quote

import botocore
import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "FQoGZXIvYXdzEXAMPLE//////////wEaDEXAMPLETOKEN+abc/def=="
REGION = "us-east-1"
WHEN = datetime.datetime(2024, 5, 17, 9, 30, 15, tzinfo=datetime.timezone.utc)
UNSIGNED = "UNSIGNED-PAYLOAD"


def encode_path(bucket, key, path_style):
    prefix = "/" + quote(bucket, safe="") if path_style else ""
    if key or not path_style:
        prefix += "/" + quote(key, safe="/~")
    return prefix


def sign(case):
    path = encode_path(case["bucket"], case["key"], case["path_style"])
    query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in case["query"]
    )
    url = f"{case['scheme']}://{case['host']}{path}" + (f"?{query}" if query else "")
    body = case.get("body", "").encode()
    request = AWSRequest(method=case["method"], url=url, data=body,
                         headers=dict(case["headers"]))
    signed_payload = case["payload"] != "unsigned"
    request.context["client_config"] = Config(s3={"payload_signing_enabled": signed_payload})
    creds = Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN if case.get("token") else None)
    auth = botocore.auth.S3SigV4Auth(creds, "s3", REGION)
    captured = {}
    canonical_request_of, string_to_sign_of = auth.canonical_request, auth.string_to_sign

    def capture_canonical_request(req):
        captured["canonical_request"] = canonical_request_of(req)
        return captured["canonical_request"]

    def capture_string_to_sign(req, canonical_request):
        captured["string_to_sign"] = string_to_sign_of(req, canonical_request)
        return captured["string_to_sign"]

    auth.canonical_request = capture_canonical_request
    auth.string_to_sign = capture_string_to_sign
    with mock.patch("botocore.auth.get_current_datetime", return_value=WHEN.replace(tzinfo=None)):
        auth.add_auth(request)
    canonical_request = captured["canonical_request"]
    string_to_sign = captured["string_to_sign"]
    out = dict(case)
    out.update({
        "path": path,
        "url": url,
        "payload_hash": request.headers["X-Amz-Content-SHA256"],
        "amz_date": request.headers["X-Amz-Date"],
        "canonical_request": canonical_request,
        "string_to_sign": string_to_sign,
        "authorization": request.headers["Authorization"],
    })
    return out


CASES = [
    {"name": "range GET, path style, local endpoint", "method": "GET", "scheme": "http",
     "host": "127.0.0.1:5000", "bucket": "data", "key": "dir/file.bin", "path_style": True,
     "query": [], "headers": [["Host", "127.0.0.1:5000"], ["Range", "bytes=0-1048575"]],
     "payload": "unsigned"},
    {"name": "range GET with If-Match, virtual hosted", "method": "GET", "scheme": "https",
     "host": "examplebucket.s3.us-east-1.amazonaws.com", "bucket": "examplebucket",
     "key": "logs/2024/05/17/part-00001.parquet", "path_style": False, "query": [],
     "headers": [["Host", "examplebucket.s3.us-east-1.amazonaws.com"],
                 ["Range", "bytes=8388608-16777215"],
                 ["If-Match", '"9b2cf535f27731c974343645a3985328"']],
     "payload": "unsigned"},
    {"name": "ListObjectsV2 with query string", "method": "GET", "scheme": "https",
     "host": "examplebucket.s3.us-east-1.amazonaws.com", "bucket": "examplebucket", "key": "",
     "path_style": False,
     "query": [["list-type", "2"], ["encoding-type", "url"], ["prefix", "photos/2024 summer/"],
               ["delimiter", "/"], ["max-keys", "1000"],
               ["continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="]],
     "headers": [["Host", "examplebucket.s3.us-east-1.amazonaws.com"]], "payload": "unsigned"},
    {"name": "ListObjectsV2 path style, empty prefix", "method": "GET", "scheme": "http",
     "host": "localhost:9000", "bucket": "my-bucket", "key": "", "path_style": True,
     "query": [["list-type", "2"], ["delimiter", "/"], ["encoding-type", "url"]],
     "headers": [["Host", "localhost:9000"]], "payload": "unsigned"},
    {"name": "HEAD with UNSIGNED-PAYLOAD", "method": "HEAD", "scheme": "https",
     "host": "s3.us-east-1.amazonaws.com", "bucket": "examplebucket", "key": "a/b/c.txt",
     "path_style": True, "query": [], "headers": [["Host", "s3.us-east-1.amazonaws.com"]],
     "payload": "unsigned"},
    {"name": "GET with session token", "method": "GET", "scheme": "https",
     "host": "examplebucket.s3.us-east-1.amazonaws.com", "bucket": "examplebucket",
     "key": "secure/object", "path_style": False, "query": [],
     "headers": [["Host", "examplebucket.s3.us-east-1.amazonaws.com"], ["Range", "bytes=0-99"]],
     "payload": "unsigned", "token": True},
    {"name": "key with spaces and reserved characters", "method": "GET", "scheme": "https",
     "host": "examplebucket.s3.us-east-1.amazonaws.com", "bucket": "examplebucket",
     "key": "my folder/my file (1) +plus&amp=eq,comma;semi:colon@at.txt", "path_style": False,
     "query": [], "headers": [["Host", "examplebucket.s3.us-east-1.amazonaws.com"]],
     "payload": "unsigned"},
    {"name": "key with UTF-8, tilde and double slash", "method": "HEAD", "scheme": "http",
     "host": "127.0.0.1:5000", "bucket": "data", "key": "r\u00e9sum\u00e9s//~user/\u30c7\u30fc\u30bf.csv",
     "path_style": True, "query": [], "headers": [["Host", "127.0.0.1:5000"]],
     "payload": "unsigned"},
    {"name": "GET with signed empty payload", "method": "GET", "scheme": "http",
     "host": "127.0.0.1:5000", "bucket": "data", "key": "plain.txt", "path_style": True,
     "query": [], "headers": [["Host", "127.0.0.1:5000"]], "payload": "signed"},
    {"name": "PUT with signed body", "method": "PUT", "scheme": "http",
     "host": "127.0.0.1:5000", "bucket": "data", "key": "upload/hello.txt", "path_style": True,
     "query": [], "headers": [["Host", "127.0.0.1:5000"], ["Content-Length", "13"]],
     "payload": "signed", "body": "Hello, world!"},
]


def main():
    cases = [sign(c) for c in CASES]
    json.dump({
        "generator": f"botocore {botocore.__version__} S3SigV4Auth",
        "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY,
        "session_token": SESSION_TOKEN,
        "region": REGION,
        "epoch_seconds": int(WHEN.timestamp()),
        "cases": cases,
    }, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
