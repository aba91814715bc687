"""Storage: engine and sessions, ORM tables, migrations glue and repositories (all SQL)."""
