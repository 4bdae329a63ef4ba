"""The integration suite's harness: servers (moto with auth, s3rver, the fault proxy), mounts,
boto3 helpers and the test environment. It lives in tools/lib/warmfs_harness.py, shared with
the benchmarks (tools/bench); `import harness` here is that module itself."""

import sys
from pathlib import Path

_LIB = str(Path(__file__).resolve().parents[2] / "tools" / "lib")
if _LIB not in sys.path:
    sys.path.insert(0, _LIB)

import warmfs_harness  # noqa: E402

sys.modules[__name__] = warmfs_harness
