"""`calmon demo`: a synthetic card-fraud stream sent through the client to a service."""
