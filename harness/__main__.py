"""`python -m harness ...`: the same as the `harness` console script."""

from harness.entry import main

if __name__ == "__main__":
    raise SystemExit(main())
