"""Which recall mode runs and with which embedding model: the option or `[recall] mode`, the
model loaded once per process, and "auto"'s rule that a vault is embedded inside a recall only
while it is small (a larger one waits for `vaultmem index --semantic`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaultmem.core.errors import UsageError
from vaultmem.core.vault import Vault
from vaultmem.search import refresh

if TYPE_CHECKING:
    from vaultmem.search.embedder import Model

MODES = ("keyword", "semantic", "hybrid")


def resolve_mode(vault: Vault, mode: str | None) -> str:
    """keyword, semantic or hybrid: the option, else `[recall] mode`; "auto" is hybrid when
    the semantic extra is installed, keyword otherwise."""
    wanted = (mode or vault.config.recall.mode).lower()
    if wanted == "keyword":
        return wanted  # without importing the embedding side at all
    from vaultmem.search import embedder

    if wanted == "auto":
        # hybrid once the extra is installed and the model made (`vaultmem index --semantic`
        # makes it): a recall never waits for a download or a distillation by default
        ready = embedder.available() and embedder.ready(vault.config.recall.model)
        return "hybrid" if ready else "keyword"
    if wanted not in MODES:
        raise UsageError(f"unknown mode {mode!r}", f"use one of: {', '.join(MODES)}")
    embedder.require()
    return wanted


# "auto" embeds a vault inside a recall only up to this many files (a second or two with the
# default transformer, ~10 documents a second on two cores); a larger one waits for `vaultmem
# index --semantic`, which shows its progress, rather than an agent's recall (or a prompt hook,
# which gives up after 5 s and would start again on the next prompt) taking minutes
AUTO_EMBED_FILES = 20


def embedded(vault: Vault, model: Model) -> bool:
    """True when the vector store exists for this model (only files changed since need
    embedding); a store that cannot be read counts as there: it is rebuilt with a warning."""
    from vaultmem.search import vectors

    try:
        store = vectors.load_manifest(vault)
    except ValueError:
        return True
    return store is not None and store.model == model.fingerprint


def no_store(vault: Vault) -> bool:
    """True when no vector store exists at all (an unreadable one counts as there)."""
    from vaultmem.search import vectors

    try:
        return vectors.load_manifest(vault) is None
    except ValueError:
        return False


def why_keyword(vault: Vault) -> tuple[str, ...]:
    """Why "auto" searched by keyword only, when someone asked for embeddings: a model set by
    hand, or the semantic runtime installed; silent for a keyword-only install."""
    from vaultmem.core import config
    from vaultmem.core.errors import UnavailableError
    from vaultmem.search import embedder

    name = vault.config.recall.model
    if not embedder.available():
        if name == config.DEFAULT_MODEL:
            return ()
        return (
            f"[recall] model is {name!r} but the semantic extra is not installed: keyword "
            "search only (pip install 'vaultmem[semantic]')",
        )
    try:
        embedder.resolve(name)
    except UnavailableError as exc:
        hint = (exc.hint or "").replace(
            "`vaultmem index --semantic`", f"`vaultmem index --semantic --vault {vault.root}`"
        )
        return (f"{exc.message}: keyword search only ({hint})",)
    return ()


def load_model(
    vault: Vault,
    mode: str,
    *,
    progress: refresh.ProgressFn | None = None,
    fallback: bool = True,
    network: bool = False,
) -> tuple[Model | None, str, tuple[str, ...]]:
    """The embedding model a mode needs, the mode that will run, and why it changed.

    An explicit semantic or hybrid mode whose model cannot be had is an error (exit 7); the
    default ("auto") falls back to keyword search with a warning instead. Only `network`
    (vaultmem index --semantic) may fetch a model.
    """
    if mode == "keyword":
        return None, mode, ()
    from vaultmem.core.errors import UnavailableError
    from vaultmem.search import embedder

    try:
        model = embedder.load_model(vault.config.recall.model, progress=progress, network=network)
        if network:  # vaultmem index --semantic: the model file checked, the query encoder made
            done = embedder.prepare(model)
            return model, mode, (done,) if done else ()
        return model, mode, ()
    except UnavailableError as exc:
        # the exact command, for this vault
        hint = (exc.hint or "").replace(
            "`vaultmem index --semantic`", f"`vaultmem index --semantic --vault {vault.root}`"
        )
        if not fallback:
            raise UnavailableError(exc.message, hint) from exc
        return None, "keyword", (f"{exc.message}: keyword search only ({hint})",)
