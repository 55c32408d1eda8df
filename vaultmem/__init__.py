"""vaultmem: durable, shared memory for AI agents in a plain markdown vault.

The library is the product; the CLI and the MCP server are thin adapters over it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
