"""Request and response schemas shared by the HTTP API and the services."""
