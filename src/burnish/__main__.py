"""`python -m burnish`: the `burnish` command line."""

from burnish.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
