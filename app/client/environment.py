"""The environment variables that name a service and its token for the command line (and
that the demo tells you to export): one home, read by app.cli.connection."""

URL_ENV = "CALMON_URL"
TOKEN_ENV = "CALMON_TOKEN"
