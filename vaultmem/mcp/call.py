"""What every MCP tool, resource and prompt is given (`Call`: the vault, the agent the server
acts for, and a way to record what was seen once the reply is out) and how tools declare
themselves (`tool`: a function, its annotations, its parameters from the signature)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core.errors import VaultmemError
from vaultmem.core.vault import Vault

if TYPE_CHECKING:
    from vaultmem.search.query import RecallResult
    from vaultmem.search.watch import Warm

# MCP tool annotations (https://modelcontextprotocol.io/specification/2025-11-25/server/tools)
READS = {"readOnlyHint": True, "openWorldHint": False}
ADDS = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
REPLACES = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False}


class Session:
    """One server's vault and agent, fixed when it starts (`vaultmem mcp --vault V --agent A`).
    If the agent is unknown the server still starts, and every call reports `problem`."""

    def __init__(self, vault_path: Path | None, agent: str) -> None:
        self.vault_path, self.agent = vault_path, agent
        self.root: Path | None = None
        self.problem: VaultmemError | None = None
        try:
            opened = Vault.open(vault_path)
            self.root = opened.root
            opened.require_agent(agent)
        except VaultmemError as exc:
            self.problem = exc
        self._warm: Warm | None = None
        self._cold = False  # True once watching failed: recall walks, as the CLI's does

    def recall(self, vault: Vault, query: str, **kw: Any) -> RecallResult:
        """A recall through a `Warm` this server starts at its first recall and keeps: later
        recalls stat only what changed since (issue 23). Where the vault cannot be watched
        (read-only, out of inotify watches) a plain recall."""
        from vaultmem.search.query import recall

        if self._warm is None and not self._cold:
            from vaultmem.search.watch import Warm

            try:
                self._warm = Warm(vault)
            except OSError:
                self._cold = True
        if self._warm is None:
            return recall(vault, query, **kw)
        result: RecallResult = self._warm.recall(query, vault=vault, **kw)
        return result

    def close(self) -> None:
        if self._warm is not None:
            self._warm.close()
            self._warm = None


class Call:
    """One request: `vault()` re-reads vaultmem.toml (a person may add an agent or change a
    setting between calls), `me(v)` is the agent (or the error saying why not), `after(fn)`
    runs `fn` once the reply has been written to the client (the read cursor, receipts)."""

    def __init__(self, session: Session, after: Callable[[Callable[[], object]], None]) -> None:
        self._session, self.after = session, after

    def vault(self) -> Vault:
        s = self._session
        return Vault.open(s.root if s.root is not None else s.vault_path)

    def me(self, vault: Vault) -> str:
        return vault.require_agent(self._session.agent)

    def recall(self, vault: Vault, query: str, **kw: Any) -> RecallResult:
        """`query.recall`, kept warm across this server's calls (`Session.recall`)."""
        return self._session.recall(vault, query, **kw)


class Text:
    """A reply whose value is text for the model: the text block, and structured content that
    carries the same text (the part Claude Code and Codex show the model when it is there)."""

    __slots__ = ("data", "text")

    def __init__(self, text: str, data: dict[str, Any]) -> None:
        self.text, self.data = text, data


ToolFn = Callable[..., "dict[str, Any] | Text"]


class Tool:
    """A tool as `tools/list` describes it: name, the docstring as description, annotations."""

    def __init__(self, fn: ToolFn, annotations: dict[str, bool]) -> None:
        import inspect

        self.fn, self.name, self.annotations = fn, fn.__name__, annotations
        self.description = inspect.cleandoc(fn.__doc__ or "")
        self._signature: Any = None

    @property
    def signature(self) -> Any:
        if self._signature is None:
            from vaultmem.mcp.schema import Signature

            self._signature = Signature(self.fn)
        return self._signature


def tool(annotations: dict[str, bool]) -> Callable[[ToolFn], Tool]:
    def register(fn: ToolFn) -> Tool:
        return Tool(fn, annotations)

    return register


def clean(value: str | None) -> str | None:
    """An identifier-like argument (a channel, an id, a date) with surrounding whitespace
    removed: a trailing newline from a model is an accident, not an attack; the grammar that
    follows is still a full match."""
    return value.strip() if isinstance(value, str) else value


def cleaned(values: list[str] | None) -> list[str]:
    return [v.strip() for v in values or []]
