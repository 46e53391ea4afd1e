"""Where a nextest run's time went, from its JUnit report: each test binary's and each test
file's (module's) summed test time, and the slowest tests. Tests run side by side, so the
sums are CPU-side figures that add up to more than the run's wall time.

usage: python3 scripts/ci/junit-times.py target/nextest/default/junit.xml [TOP]
"""

import collections
import sys
import xml.etree.ElementTree as ET

report = ET.parse(sys.argv[1]).getroot()
top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
by_binary = collections.Counter()
by_module = collections.Counter()
count = collections.Counter()
tests = []
for suite in report.iter("testsuite"):
    binary = suite.get("name", "?")
    for case in suite.iter("testcase"):
        seconds = float(case.get("time", 0))
        name = case.get("name", "?")
        module = name.split("::")[0] if "::" in name else "(top level)"
        by_binary[binary] += seconds
        by_module[f"{binary} {module}"] += seconds
        count[binary] += 1
        tests.append((seconds, f"{binary} {name}"))

print("tests by binary (count, summed time):")
for binary, seconds in by_binary.most_common():
    print(f"{seconds:9.1f} s  {count[binary]:4d} tests  {binary}")
print("\ntests by file (module), summed time, the 25 largest:")
for module, seconds in by_module.most_common(25):
    print(f"{seconds:9.1f} s  {module}")
print(f"\nthe {top} slowest tests:")
for seconds, name in sorted(tests, reverse=True)[:top]:
    print(f"{seconds:9.1f} s  {name}")
