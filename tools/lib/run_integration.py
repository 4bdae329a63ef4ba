#!/usr/bin/env python3
"""Run the integration tests (stdlib unittest) and count them the way tools/test reports.

Every collected test that did not pass counts as failed, including tests that never ran because
their module or class fixture failed, and tests that were skipped (the suite never skips: a
missing prerequisite is a failure). Results are also written, after every test, to --results as
JSON, so tools/test can still count if this process is killed by its timeout.

Usage: run_integration.py [--results FILE] [-k PATTERN] [NAME ...]
  NAME: a module, class or test under tests/integration (test_cli, test_cli.Stats, ...).
The last line printed is "integration: N passed, N failed".
"""

import argparse
import json
import sys
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITE_DIR = REPO / "tests" / "integration"


def iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from iter_tests(t)
        else:
            yield t


class CountingResult(unittest.TextTestResult):
    results_path: Path | None = None
    collected: list[str] = []

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.passed: list[str] = []
        self.not_passed: dict[str, str] = {}
        self.durations: list[tuple[float, str]] = []
        self._started: dict[str, float] = {}
        self._write()

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        start = self._started.pop(test.id(), None)
        if start is not None:
            self.durations.append((time.monotonic() - start, test.id()))
        self._write()

    def addSuccess(self, test):
        super().addSuccess(test)
        if test.id() not in self.not_passed:
            self.passed.append(test.id())

    def _bad(self, test, why):
        self.not_passed[test.id()] = why
        if test.id() in self.passed:
            self.passed.remove(test.id())

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad(test, "failed")

    def addError(self, test, err):
        super().addError(test, err)
        self._bad(test, "error")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._bad(test, "subtest failed")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._bad(test, f"skipped: {reason}")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._bad(test, "unexpected success")

    unclaimed_reports: list[str] = []  # sanitizer reports no test claimed

    def counts(self):
        passed = len(set(self.passed) & set(self.collected))
        return passed, len(self.collected) - passed + len(self.unclaimed_reports)

    def _write(self, done=False):
        if self.results_path is None:
            return
        passed, failed = self.counts()
        data = {"collected": len(self.collected), "passed": passed, "failed": failed,
                "done": done, "not_passed": self.not_passed}
        tmp = self.results_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.results_path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path)
    ap.add_argument("-k", dest="patterns", action="append")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()

    sys.path.insert(0, str(SUITE_DIR))
    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = [p if "*" in p else f"*{p}*" for p in args.patterns]
    if args.names:
        suite = loader.loadTestsFromNames(args.names)
    else:
        suite = loader.discover(str(SUITE_DIR), pattern="test_*.py", top_level_dir=str(SUITE_DIR))
    collected = [t.id() for t in iter_tests(suite)]
    # A module that fails to import shows up as a _FailedTest: it is counted like any test.
    CountingResult.collected = collected
    CountingResult.results_path = args.results
    print(f"integration: {len(collected)} tests collected", flush=True)

    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=CountingResult,
                                     buffer=False)
    start = time.monotonic()
    result = runner.run(suite)
    # Sanitizer builds: a report of a warmfs process outside any test (a class fixture's
    # mount, checked at its exit for leaks) fails the run too.
    harness = sys.modules.get("harness")
    if harness is not None:
        for report in harness.claim_sanitizer_reports():
            print(f"integration: sanitizer report outside any test: {report}\n"
                  f"{harness._tail(report, 60)}")
            result.unclaimed_reports.append(str(report))
    result._write(done=True)

    print(f"\nintegration: {time.monotonic() - start:.0f}s; slowest tests:")
    for seconds, test_id in sorted(result.durations, reverse=True)[:8]:
        print(f"  {seconds:6.1f}s  {test_id}")
    if result.not_passed:
        print("integration: did not pass:")
        for test_id, why in sorted(result.not_passed.items()):
            print(f"  {test_id}: {why}")
    never_ran = [t for t in collected if t not in result.passed and t not in result.not_passed]
    if never_ran:
        print(f"integration: {len(never_ran)} tests never ran (their fixture failed), e.g. "
              f"{never_ran[0]}")
    passed, failed = result.counts()
    print(f"integration: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
