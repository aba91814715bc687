"""A fraud rate below the smallest normal double is refused by name (schemathesis sent
pi = 5e-324 to what-if: the calibration's odds underflowed to NaN, a 500). Both backends."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.support.api import AuthHeaders


def test_a_subnormal_fraud_rate_is_a_422(client: TestClient, auth_headers: AuthHeaders) -> None:
    headers = auth_headers("admin", "read")
    assert client.post("/v1/models", json={"name": "k", "threshold": 0.5}, headers=headers)
    whatif = client.post("/v1/models/k/whatif", json={"priors": [0.5, 5e-324]}, headers=headers)
    assert whatif.status_code == 422, whatif.text
    assert whatif.json()["error"]["details"] == [
        {"field": "priors.1", "message": "Value error, a fraud rate must be at least 1e-300"}
    ]
    catalogue = client.get("/v1/models/k/metric-catalogue", params={"pi": 5e-324}, headers=headers)
    assert catalogue.status_code == 422, catalogue.text
    assert catalogue.json()["error"]["details"][0]["field"] == "pi"
