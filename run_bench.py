#!/usr/bin/env python3
"""normbench: `python run_bench.py --help`.  A thin entry point; the CLI lives in harness/cli.py."""
from harness.cli import main

if __name__ == "__main__":
    main()
