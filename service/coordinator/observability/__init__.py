"""What operators see of the service: Prometheus metrics and structured logs."""
