#!/usr/bin/env python3
"""normbench: `python run_bench.py --help`.  A thin entry point; the CLI lives in harness/cli.py."""
import sys

from normbench.harness.interrupt import Interrupted, install

if __name__ == "__main__":
    install()                     # before the heavy imports: a signal then still exits cleanly
    try:
        from normbench.harness.cli import main
    except Interrupted as e:
        sys.exit(128 + e.signum)
    main()
