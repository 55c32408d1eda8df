"""Commands of the log layer (registered on the shared app by importing this module)."""

from __future__ import annotations
