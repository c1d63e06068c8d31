"""Paimon Commit Coordinator service."""
