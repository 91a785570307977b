"""Reads `go test -json` on stdin and prints what plain `go test` prints
(each package's ok/FAIL line, and the whole output of every failed test),
then the slowest tests, so a CI log says where its time went, and every
test that skipped, with its reason. GOPVE_TEST_TIMES=FILE also writes
every top-level test's seconds there (tab-separated, slowest first). Exits 1 when a test or a package failed
(or the stream held no result at all), and, under GOPVE_REQUIRE_LAB=1 (CI),
when a test skipped: a skip in CI is not a pass."""
import json
import os
import sys

SLOWEST = 25

outputs = {}  # (package, test) -> [lines]
elapsed = []  # (seconds, package, test)
skipped = []  # (package, test, its output: the reason)
failed = False
seen = False
for raw in sys.stdin:
    try:
        ev = json.loads(raw)
    except ValueError:
        # go test's own messages (build errors) are not JSON: pass them on
        sys.stdout.write(raw)
        failed = failed or raw.startswith(("FAIL", "#"))
        continue
    pkg, test, action = ev.get("Package", ""), ev.get("Test"), ev.get("Action")
    key = (pkg, test)
    if action == "build-output":
        sys.stdout.write(ev.get("Output", ""))
    elif action == "build-fail":
        failed = True
    elif action == "output":
        if test is None:
            line = ev.get("Output", "")
            # the package's summary lines, as plain go test prints them
            if line.startswith(("ok ", "FAIL", "?   ", "panic:", "---")) or "[build failed]" in line:
                sys.stdout.write(line)
        else:
            outputs.setdefault(key, []).append(ev.get("Output", ""))
    elif action in ("pass", "fail", "skip"):
        seen = True
        if test is not None:
            if action == "fail":
                failed = True
                sys.stdout.write("".join(outputs.get(key, [])))
            elif action == "skip":
                skipped.append((pkg, test, "".join(outputs.get(key, []))))
            if "/" not in test:
                elapsed.append((ev.get("Elapsed", 0.0), pkg, test))
            outputs.pop(key, None)
        elif action == "fail":
            failed = True
            # a package that failed outside any test (a panic, a timeout)
            for (p, t), lines in list(outputs.items()):
                if p == pkg:
                    sys.stdout.write("".join(lines))
                    outputs.pop((p, t))
    sys.stdout.flush()

elapsed.sort(reverse=True)
if os.environ.get("GOPVE_TEST_TIMES"):
    with open(os.environ["GOPVE_TEST_TIMES"], "w") as f:
        for sec, pkg, test in elapsed:
            f.write("%.1f\t%s\t%s\n" % (sec, pkg.rsplit("/modules-src/", 1)[-1], test))
print("\ngo test: the %d slowest tests" % min(SLOWEST, len(elapsed)))
for sec, pkg, test in elapsed[:SLOWEST]:
    print("%8.1f s  %s %s" % (sec, pkg.rsplit("/modules-src/", 1)[-1], test))
print("\ngo test: %d tests skipped" % len(skipped))
for pkg, test, out in skipped:
    print("  SKIP %s %s" % (pkg.rsplit("/modules-src/", 1)[-1], test))
    sys.stdout.write("".join("    " + line for line in out.splitlines(True)))
if skipped and os.environ.get("GOPVE_REQUIRE_LAB") == "1":
    print("go test: GOPVE_REQUIRE_LAB=1: a skipped test has not passed")
    failed = True
sys.exit(1 if failed or not seen else 0)
