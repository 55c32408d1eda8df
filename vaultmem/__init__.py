"""vaultmem: durable, shared memory for AI agents in a plain markdown vault.

The library is the product; the CLI and the MCP server are thin adapters over it. Each name
below is the use case behind the command of the same name (`vaultmem.recall` is
`vaultmem recall`):

    import vaultmem

    vault = vaultmem.Vault.open("example-vault")
    pack = vaultmem.read(vault, "ella", peek=True)          # the session-start pack
    entry = vaultmem.append(vault, "ella", "Webhook retries are idempotent", type_="fix").entry
    hits = vaultmem.recall(vault, "stripe webhook", agent="ella").hits

Names load on first use (PEP 562), so `import vaultmem` costs nothing on the CLI's hot path.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> "module:attribute"
_API = {
    "Vault": "vaultmem.core.vault:Vault",
    "VaultmemError": "vaultmem.core.errors:VaultmemError",
    "init": "vaultmem.app.scaffold:init_vault",
    "read": "vaultmem.app.pack:read_pack",
    "commit_cursor": "vaultmem.app.pack:commit_cursor",
    "record_receipt": "vaultmem.app.pack:record_receipt",
    "inbox": "vaultmem.app.inbox:inbox",
    "receipts": "vaultmem.app.receipts:receipts",
    "status": "vaultmem.app.status:status",
    "upgrade": "vaultmem.app.upgrade:upgrade",
    "remember": "vaultmem.memory.facts:remember",
    "memories": "vaultmem.memory.facts:list_facts",
    "retract": "vaultmem.memory.facts:retract",
    "forget": "vaultmem.memory.facts:forget",
    "append": "vaultmem.nexus.log:append",
    "log": "vaultmem.nexus.reading:read_log",
    "decide": "vaultmem.nexus.decisions:decide",
    "decisions": "vaultmem.nexus.decisions:list_decisions",
    "checkpoint": "vaultmem.nexus.checkpoints:write_checkpoint",
    "show_checkpoint": "vaultmem.nexus.checkpoints:show_checkpoint",
    "set_state": "vaultmem.nexus.state:set_state_section",
    "verify": "vaultmem.nexus.verify:verify",
    "repair": "vaultmem.nexus.repair:repair",
    "retain": "vaultmem.bank.retain:retain",
    "approve": "vaultmem.bank.review:approve",
    "reject": "vaultmem.bank.review:reject",
    "recall": "vaultmem.recall.query:recall",
    "alerts": "vaultmem.nexus.alerts:list_alerts",
    "resolve": "vaultmem.nexus.alerts:resolve",
    "wm_set": "vaultmem.nexus.working:wm_set",
    "wm_get": "vaultmem.nexus.working:wm_get",
    "wm_list": "vaultmem.nexus.working:read_working",
    "wm_del": "vaultmem.nexus.working:wm_del",
    "wm_push": "vaultmem.nexus.working:wm_push",
}

__all__ = [
    "Vault",
    "VaultmemError",
    "__version__",
    "alerts",
    "append",
    "approve",
    "checkpoint",
    "commit_cursor",
    "decide",
    "decisions",
    "forget",
    "inbox",
    "init",
    "log",
    "memories",
    "read",
    "recall",
    "receipts",
    "record_receipt",
    "reject",
    "remember",
    "repair",
    "resolve",
    "retain",
    "retract",
    "set_state",
    "show_checkpoint",
    "status",
    "upgrade",
    "verify",
    "wm_del",
    "wm_get",
    "wm_list",
    "wm_push",
    "wm_set",
]


def __getattr__(name: str) -> Any:
    target = _API.get(name)
    if target is None:
        raise AttributeError(f"module 'vaultmem' has no attribute {name!r}")
    module, attr = target.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(types.ModuleType):
    """`import vaultmem.recall.query` binds the sub-package as `vaultmem.recall`; the public
    name `vaultmem.recall` is the use case, so that binding is skipped (the package stays
    importable through sys.modules, which is what `import` and `from ... import` use)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from vaultmem.app.inbox import inbox
    from vaultmem.app.pack import commit_cursor, record_receipt
    from vaultmem.app.pack import read_pack as read
    from vaultmem.app.receipts import receipts
    from vaultmem.app.scaffold import init_vault as init
    from vaultmem.app.status import status
    from vaultmem.app.upgrade import upgrade
    from vaultmem.bank.retain import retain
    from vaultmem.bank.review import approve, reject
    from vaultmem.core.errors import VaultmemError
    from vaultmem.core.vault import Vault
    from vaultmem.memory.facts import forget, remember, retract
    from vaultmem.memory.facts import list_facts as memories
    from vaultmem.nexus.alerts import list_alerts as alerts
    from vaultmem.nexus.alerts import resolve
    from vaultmem.nexus.checkpoints import show_checkpoint
    from vaultmem.nexus.checkpoints import write_checkpoint as checkpoint
    from vaultmem.nexus.decisions import decide
    from vaultmem.nexus.decisions import list_decisions as decisions
    from vaultmem.nexus.log import append
    from vaultmem.nexus.reading import read_log as log
    from vaultmem.nexus.repair import repair
    from vaultmem.nexus.state import set_state_section as set_state
    from vaultmem.nexus.verify import verify
    from vaultmem.nexus.working import read_working as wm_list
    from vaultmem.nexus.working import wm_del, wm_get, wm_push, wm_set
    from vaultmem.recall.query import recall
