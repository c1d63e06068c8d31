"""Batch reads of the data source (to be built: see the brief)."""
