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
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> "module:attribute"
_API = {
    "Vault": "vaultmem.core.vault:Vault",
    "VaultmemError": "vaultmem.core.errors:VaultmemError",
    "init": "vaultmem.app.lifecycle.scaffold:init",
    "read": "vaultmem.app.pack.build:read",
    "commit_cursor": "vaultmem.app.pack.build:commit_cursor",
    "record_receipt": "vaultmem.app.pack.build:record_receipt",
    "inbox": "vaultmem.app.pack.inbox:inbox",
    "receipts": "vaultmem.app.pack.receipts:receipts",
    "status": "vaultmem.app.lifecycle.status:status",
    "upgrade": "vaultmem.app.lifecycle.upgrade:upgrade",
    "remember": "vaultmem.memory.facts:remember",
    "memories": "vaultmem.memory.facts:memories",
    "retract": "vaultmem.memory.facts:retract",
    "forget": "vaultmem.app.privacy.forget:forget",
    "append": "vaultmem.nexus.log:append",
    "log": "vaultmem.nexus.reading:log",
    "decide": "vaultmem.nexus.decisions:decide",
    "decisions": "vaultmem.nexus.decisions:decisions",
    "checkpoint": "vaultmem.nexus.checkpoints:checkpoint",
    "show_checkpoint": "vaultmem.nexus.checkpoints:show_checkpoint",
    "set_state": "vaultmem.nexus.state:set_state",
    "verify": "vaultmem.nexus.verify:verify",
    "repair": "vaultmem.nexus.repair:repair",
    "retain": "vaultmem.bank.retain:retain",
    "approve": "vaultmem.bank.review:approve",
    "reject": "vaultmem.bank.review:reject",
    "recall": "vaultmem.search.query:recall",
    "alerts": "vaultmem.nexus.alerts:alerts",
    "resolve": "vaultmem.nexus.alerts:resolve",
    "wm_set": "vaultmem.nexus.working:wm_set",
    "wm_get": "vaultmem.nexus.working:wm_get",
    "wm_list": "vaultmem.nexus.working:wm_list",
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


if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from vaultmem.app.lifecycle.scaffold import init
    from vaultmem.app.lifecycle.status import status
    from vaultmem.app.lifecycle.upgrade import upgrade
    from vaultmem.app.pack.build import commit_cursor, read, record_receipt
    from vaultmem.app.pack.inbox import inbox
    from vaultmem.app.pack.receipts import receipts
    from vaultmem.app.privacy.forget import forget
    from vaultmem.bank.retain import retain
    from vaultmem.bank.review import approve, reject
    from vaultmem.core.errors import VaultmemError
    from vaultmem.core.vault import Vault
    from vaultmem.memory.facts import memories, remember, retract
    from vaultmem.nexus.alerts import alerts, resolve
    from vaultmem.nexus.checkpoints import checkpoint, show_checkpoint
    from vaultmem.nexus.decisions import decide, decisions
    from vaultmem.nexus.log import append
    from vaultmem.nexus.reading import log
    from vaultmem.nexus.repair import repair
    from vaultmem.nexus.state import set_state
    from vaultmem.nexus.verify import verify
    from vaultmem.nexus.working import wm_del, wm_get, wm_list, wm_push, wm_set
    from vaultmem.search.query import recall
