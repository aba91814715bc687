"""Use cases shared by the HTTP API and the CLI. Services flush; the caller commits."""
