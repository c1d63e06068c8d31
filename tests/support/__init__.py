"""What the tests share: servers in a thread or a process, databases, object stores, Paimon files
written as a writer would, pypaimon as the reader, and the doubles of outside systems. Nothing here is a
test; tests/<package>/ holds the tests, each beside the code it tests."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The root of this checkout (README.md, examples/, openapi/, the Dockerfile)."""
