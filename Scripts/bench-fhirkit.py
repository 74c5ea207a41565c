#!/usr/bin/env python3
"""The reference figure of `caregate-bench validate`: fhirkit-rs (a Rust R4 validator from PyPI, pinned in
Scripts/bench-requirements.txt) validating the same files, in passes; prints `best_seconds megabytes`.

    bench-fhirkit.py PASSES FILE...
"""
import sys
import time

import fhirkit

passes = int(sys.argv[1])
documents = [open(path, "rb").read() for path in sys.argv[2:]]
best = None
for _ in range(passes):
    started = time.perf_counter()
    for document in documents:
        fhirkit.validate(document)
    elapsed = time.perf_counter() - started
    best = elapsed if best is None else min(best, elapsed)
print(best, sum(len(d) for d in documents) / 1e6)
