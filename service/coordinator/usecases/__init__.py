"""Use cases: orchestrate lock, reconcile, plan, check, write, record, publish."""
