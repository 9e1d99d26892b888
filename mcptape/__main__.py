"""`python -m mcptape`: the same entry point as the `mcptape` console script."""

from mcptape.cli import console

raise SystemExit(console())
