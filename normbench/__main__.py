"""`python -m normbench`: the `normbench` command (harness/cli.py)."""
from normbench.harness.cli import main

if __name__ == "__main__":
    main()
