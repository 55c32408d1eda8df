"""The files `init` writes, from `templates/` (shipped inside the wheel as `_templates/`)."""

from __future__ import annotations

from pathlib import Path
from string import Template


def templates_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    packaged = package / "_templates"  # inside the wheel (hatch force-include)
    return packaged if packaged.is_dir() else package.parent / "templates"


def template(template_name: str, /, **values: str) -> str:
    """A template's text with `$name` placeholders filled in."""
    return Template((templates_dir() / template_name).read_text(encoding="utf-8")).substitute(
        values
    )
