"""HTTP layer: FastAPI routers that parse, call one use case and render."""
