"""All SQL of the service layer lives in these repository modules (STYLE convention 2)."""
