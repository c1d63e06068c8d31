"""SQLAlchemy models, engine and repositories."""
