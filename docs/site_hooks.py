"""MkDocs hook: the site's home page is the README itself, so the front door is written once.

The README links into the site as ``docs/page.md`` (the paths GitHub resolves from the top of
the repository); on the site the home page sits inside ``docs/``, so those links lose the prefix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parent.parent / "README.md"
HOME = "index.md"


def home_page_markdown(readme: str) -> str:
    """The README with its ``docs/`` links made relative to the site's home page."""
    return re.sub(r"\]\(docs/", "](", readme)


def on_files(files: Files, config: Any) -> Files:
    """Replace docs/index.md (a pointer to the README, for readers of the repository) with the
    README's text."""
    stub = files.get_file_from_path(HOME)
    if stub is not None:
        files.remove(stub)
    files.append(File.generated(config, HOME, content=home_page_markdown(README.read_text())))
    return files
