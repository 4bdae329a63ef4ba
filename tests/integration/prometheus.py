"""Scraping a warmfs /metrics endpoint in the integration tests: fetch, check with promtool
(Debian's prometheus package), and parse the text format into samples."""

import math
import re
import shutil
import subprocess
import unittest
import urllib.error
import urllib.request

import harness

PROMTOOL = shutil.which("promtool", path=harness.BASE_PATH)


def require_promtool() -> None:
    if PROMTOOL is None:
        raise harness.HarnessError("promtool not found (apt-get install prometheus; "
                                   "tools/lib/install-deps.sh installs it)")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


class Scrape:
    """One parsed scrape: TYPE of each family, and every sample's value."""

    def __init__(self, text: str):
        self.text = text
        self.types: dict[str, str] = {}
        self.values: dict[tuple, float] = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
                continue
            if not line or line.startswith("#"):
                continue
            m = SAMPLE.match(line)
            if m is None:
                raise AssertionError(f"unparsable line {line!r}")
            labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
            self.values[(m.group(1), labels)] = float(m.group(3))

    def get(self, name: str, **labels) -> float:
        key = (name, tuple(sorted(labels.items())))
        if key not in self.values:
            raise AssertionError(f"no sample {name}{labels} in the scrape:\n{self.text[:3000]}")
        return self.values[key]

    def family_of(self, sample: str) -> tuple[str, str] | None:
        for suffix in ("", "_bucket", "_sum", "_count"):
            if suffix and not sample.endswith(suffix):
                continue
            base = sample[:len(sample) - len(suffix)] if suffix else sample
            if base in self.types:
                return base, self.types[base]
        return None

    def monotonic_keys(self) -> list[tuple]:
        """Samples that must never go down: counters, and histograms' buckets, sums, counts."""
        out = []
        for key in self.values:
            fam = self.family_of(key[0])
            if fam and fam[1] in ("counter", "histogram"):
                out.append(key)
        return out

    def check_histograms(self, case: unittest.TestCase) -> None:
        for name, kind in self.types.items():
            if kind != "histogram":
                continue
            series: dict[tuple, list] = {}
            for (sample, labels), v in self.values.items():
                if sample == name + "_bucket":
                    rest = tuple(kv for kv in labels if kv[0] != "le")
                    le = dict(labels)["le"]
                    series.setdefault(rest, []).append((math.inf if le == "+Inf" else float(le), v))
            case.assertTrue(series, f"histogram {name} has no buckets")
            for rest, buckets in series.items():
                buckets.sort()
                counts = [v for _, v in buckets]
                case.assertEqual(counts, sorted(counts), f"{name}{rest}: buckets not cumulative")
                case.assertEqual(buckets[-1][0], math.inf, f"{name}{rest}: no +Inf bucket")
                case.assertEqual(buckets[-1][1], self.get(name + "_count", **dict(rest)),
                                 f"{name}{rest}: +Inf differs from _count")
                self.get(name + "_sum", **dict(rest))


def fetch(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=15) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode(errors="replace")


def promtool_check(case: unittest.TestCase, text: str) -> None:
    run = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True,
                         timeout=30)
    case.assertEqual(run.returncode, 0,
                     f"promtool check metrics failed (exit {run.returncode}):\n"
                     f"{run.stdout.decode()}{run.stderr.decode()}\n--- scrape ---\n{text[:4000]}")


def scrape(case: unittest.TestCase, port: int) -> Scrape:
    status, ctype, text = fetch(port)
    case.assertEqual(status, 200, text)
    case.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
    promtool_check(case, text)
    s = Scrape(text)
    s.check_histograms(case)
    return s
