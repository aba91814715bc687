"""Logging setup and the Prometheus collector."""
