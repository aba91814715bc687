"""A Python client of calmon's HTTP API: send numpy arrays, DataFrames or files; read series.

httpx is its only dependency beyond calmon's own; pandas is used when you pass or ask for a
DataFrame, never imported otherwise.
"""

from app.client.http import (
    BatchResult,
    CalmonAPIError,
    CalmonClient,
    LabelResult,
    SendResult,
)

__all__ = ["BatchResult", "CalmonAPIError", "CalmonClient", "LabelResult", "SendResult"]
