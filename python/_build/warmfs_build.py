"""A PEP 517 build backend in the standard library alone, so `pip install ./python` works
offline: pip builds in an isolated environment that has no setuptools unless it can download
it, and this package needs nothing more than its files copied into a wheel."""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "warmfs"


def _project():
    text = (ROOT / "pyproject.toml").read_text()
    field = lambda k: re.search(rf'^{k}\s*=\s*"([^"]*)"', text, re.M).group(1)  # noqa: E731
    return field("name"), field("version"), field("description"), field("requires-python")


def _metadata():
    name, version, summary, python = _project()
    readme = (ROOT / "README.md").read_text()
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
            f"License: Apache-2.0\nRequires-Python: {python}\nProvides-Extra: torch\n"
            f'Requires-Dist: torch; extra == "torch"\n'
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _sources():
    for p in sorted((ROOT / PACKAGE).rglob("*.py")):
        yield p.relative_to(ROOT).as_posix(), p.read_bytes()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, _, _ = _project()
    dist_info = f"{name}-{version}.dist-info"
    files = dict(_sources())
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: warmfs_build\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    name, version, _, _ = _project()
    base = f"{name}-{version}"
    out = os.path.join(sdist_directory, f"{base}.tar.gz")
    with tarfile.open(out, "w:gz") as t:
        files = ["pyproject.toml", "README.md", "_build/warmfs_build.py", *dict(_sources())]
        for rel in files:
            t.add(ROOT / rel, arcname=f"{base}/{rel}")
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        t.addfile(info, io.BytesIO(pkg_info))
    return os.path.basename(out)
