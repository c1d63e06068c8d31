"""Table locks behind the LockBackend protocol."""
