"""The built-in web UI's files: plain HTML, CSS and JavaScript, no build step.

Everything the pages load ships inside this package (``static/``), including the vendored
charting library (uPlot) and the Swagger UI assets behind ``/docs``, so the UI works with no
network beyond calmon itself. ``static/vendor/manifest.json`` names each vendored file's npm
package, version and checksum. The pages read the same read-scope API as any client.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

STATIC_DIR = Path(str(files(__name__).joinpath("static")))
"""The directory served under ``/ui/static``."""

AUTH_PLACEHOLDER = "{{auth}}"


def index_html(*, auth_disabled: bool) -> str:
    """The single page, told whether the API asks for a token (so it asks only when needed)."""
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    return page.replace(AUTH_PLACEHOLDER, "disabled" if auth_disabled else "required")
