"""The commands agents run on every turn import only what they use.

Each command runs as a real process (`python -c` around `vaultmem.cli.main.main`, as the
console script runs it) on a vault as vaultmem writes it, and fails if a module that command
has no use for was imported. Start-up is most of what these commands cost (issue 23:
`read` 10.5x and `append` 7.3x the cost of `python -c pass`, ~2/3 of it imports), so a new
top-level import that drags in YAML or a CLI framework shows here before it shows in a
benchmark. Each banned module says why it is banned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._imports import BASE64, EVERYWHERE, NO_WAIT, NOT_SEARCH, OPENSSL, YAML, check, loaded

pytestmark = pytest.mark.slow

BANNED: dict[str, dict[str, str]] = {
    "read": {
        **EVERYWHERE,
        **YAML,
        **NOT_SEARCH,
        **OPENSSL,
        **NO_WAIT,
        **BASE64,
        "vaultmem.bank": "ella proposed no fact: the pending section looks before importing",
        "cryptography": "every entry shown was signed on this machine, and its append put the "
        "signature in the memo of checked signatures (nexus/log.py): nothing to check again",
        "vaultmem.nexus.verify": "a pack checks what it shows with nexus/shown.py and the memo "
        "(nexus/memo.py), not with verify's report",
        "vaultmem.app.condense": "no profile on disk: the profile builder stays unloaded",
        "secrets": "temp names and ids come from os.urandom (secrets loads hmac, random)",
    },
    "read --json (own pending facts)": {
        **EVERYWHERE,
        **YAML,
        **NOT_SEARCH,
        "vaultmem.app.condense": "no profile on disk",
    },
    "append": {
        **EVERYWHERE,
        **YAML,
        **NOT_SEARCH,
        **OPENSSL,
        **NO_WAIT,
        **BASE64,
        "vaultmem.app.pack": "the read pack: an append shows nothing",
        "vaultmem.bank": "the bank: an append proposes nothing",
        "vaultmem.memory": "memory notes: an append writes only the log",
        "vaultmem.nexus.reading": "the log is read back only for an --ack's id",
        "secrets": "temp names and ids come from os.urandom",
    },
    "inbox": {
        **EVERYWHERE,
        **YAML,
        **NOT_SEARCH,
        **OPENSSL,
        **NO_WAIT,
        **BASE64,
        "vaultmem.bank": "the inbox shows the log",
    },
    "hook session-start": {
        **EVERYWHERE,
        **YAML,
        **NOT_SEARCH,
        **OPENSSL,
        "vaultmem.bank": "ella proposed no fact",
    },
    "hook prompt (nothing new)": {
        **EVERYWHERE,
        **YAML,
        "cryptography": "nothing new, nothing to verify: decided with os and json alone",
        "tomllib": "the quick path reads no config",
        "dataclasses": "the same: app/hooks/quick.py",
        "pathlib": "the same",
        "vaultmem.nexus": "the same",
    },
}


@pytest.fixture
def turn_vault(tmp_path: Path) -> Path:
    """A vault as vaultmem writes it: two agents, a handoff to ella, a fact, a checkpoint,
    lyra's pending fact, read once by both (so prompts have nothing new)."""
    from vaultmem.app.lifecycle.scaffold import init
    from vaultmem.bank.retain import retain
    from vaultmem.core.vault import Vault
    from vaultmem.memory.facts import remember
    from vaultmem.nexus.checkpoints import checkpoint
    from vaultmem.nexus.log import append

    root = tmp_path / "vault"
    init(root, agents=["ella", "lyra"], reviewers=["chiara"])
    v = Vault.open(root)
    for i in range(5):
        append(v, "lyra", f"note {i} about the booking service", channel="api")
    append(v, "lyra", "Webhook retries are yours now", type_="handoff", to=["ella"])
    remember(v, "Webhooks retry three times.", name="webhook-retries", type_="project")
    checkpoint(v, "ella", "Halfway through the retry work", task="retries")
    retain(v, "The staging database is reset nightly.", agent="lyra", type_="project")
    return root


def _check(name: str, modules: set[str]) -> None:
    check(name, modules, BANNED[name])


def test_read_imports_only_what_it_uses(turn_vault: Path, tmp_path: Path) -> None:
    v = ["--vault", str(turn_vault)]
    _check("read", loaded(tmp_path, ["read", *v, "--agent", "ella", "--peek"]))
    mods = loaded(tmp_path, ["read", *v, "--agent", "lyra", "--peek", "--json"])
    assert "vaultmem.bank.store" in mods  # lyra's pending fact is in her pack
    _check("read --json (own pending facts)", mods)


def test_append_imports_only_what_it_uses(turn_vault: Path, tmp_path: Path) -> None:
    args = ["append", "fixed the retry loop", "--type", "fix", "--channel", "api"]
    mods = loaded(tmp_path, [*args, "--vault", str(turn_vault), "--agent", "ella"])
    assert "cryptography" in mods  # the entry is signed: that library is used here
    _check("append", mods)
    # on the system clock (the suite pins VAULTMEM_NOW, an ISO time datetime parses), the
    # entry's stamp is made without datetime
    unpinned = loaded(tmp_path, [*args, "--vault", str(turn_vault), "--agent", "ella"],
                      env={"VAULTMEM_NOW": ""})  # fmt: skip
    check("append (system clock)", unpinned, {"datetime": "an entry's stamp is time.gmtime's"})


def test_inbox_imports_only_what_it_uses(turn_vault: Path, tmp_path: Path) -> None:
    _check("inbox", loaded(tmp_path, ["inbox", "--vault", str(turn_vault), "--agent", "ella"]))


def test_hooks_import_only_what_they_use(turn_vault: Path, tmp_path: Path) -> None:
    v = ["--vault", str(turn_vault), "--agent", "ella"]
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"}
    mods = loaded(tmp_path, ["hook", "session-start", *v], json.dumps(start))
    _check("hook session-start", mods)
    loaded(tmp_path, ["read", *v])  # everything is read now: the next prompt has nothing new
    prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
    mods = loaded(tmp_path, ["hook", "prompt", *v], json.dumps(prompt))
    assert "vaultmem.app.hooks.quick" in mods
    _check("hook prompt (nothing new)", mods)


def test_an_auto_recall_on_a_vault_not_yet_embedded_loads_no_model(tmp_path: Path) -> None:
    """With the semantic extra installed and a vault too large to embed inside a recall, "auto"
    searches by keyword; it used to load the transformer first (onnxruntime, ~0.5 s and 250 MB
    on every prompt hook that recalled) only to decide it would not use it."""
    from vaultmem.app.lifecycle.scaffold import init
    from vaultmem.search import embedder
    from vaultmem.search.query import AUTO_EMBED_FILES

    if not embedder.available():
        pytest.skip("the semantic extra is not installed")
    root = tmp_path / "vault"
    init(root, agents=["ella"], reviewers=["chiara"])
    (root / "wiki").mkdir(exist_ok=True)
    for i in range(AUTO_EMBED_FILES + 5):
        (root / "wiki" / f"page-{i}.md").write_text(f"# Page {i}\n\nstripe webhooks {i}\n")
    args = ["recall", "stripe webhooks", "--vault", str(root), "--agent", "ella", "--json"]
    mods = loaded(tmp_path, args)
    assert "whoosh" in mods  # it did search
    check(
        "recall, auto, not embedded",
        mods,
        {
            "onnxruntime": "the model is not used: keyword search until index --semantic",
            "numpy": "the same",
            "tokenizers": "the same",
        },
    )


def test_a_keyword_recall_imports_only_what_it_uses(turn_vault: Path, tmp_path: Path) -> None:
    """A cold `vaultmem recall` (issue 23: a budget of 12x `python -c pass` at 10,000 notes):
    whoosh loads without what whoosh_import.load keeps out, and vaultmem's own modules without
    dataclasses or OpenSSL-backed imports they had no use for."""
    v = ["--vault", str(turn_vault), "--agent", "ella"]
    args = ["recall", "webhook retries", "--mode", "keyword", *v, "--json"]
    loaded(tmp_path, args)  # builds the index: the next one is a recall as agents run it
    mods = loaded(tmp_path, args)
    assert "whoosh.searching" in mods and "whoosh.lang.snowball.english" in mods
    without_whoosh = {k: v for k, v in EVERYWHERE.items() if k != "whoosh"}
    check(
        "recall",
        mods,
        {
            **without_whoosh,
            **YAML,
            **OPENSSL,
            **NO_WAIT,
            **BASE64,
            "shutil": "a rebuild's, and whoosh's compound files' (it imports bz2 and lzma)",
            "whoosh.sorting": "sorted or grouped results: never asked for",
            "vaultmem.search.embedder": "--mode keyword: the embedding side is not looked at",
            "secrets": "a generation's name comes from os.urandom (secrets loads hmac, random)",
            "hmac": "the same",
            "whoosh.lang.snowball.french": "one stemmer loads, the vault's language's",
            "whoosh.lang.snowball.russian": "the same",
            "whoosh.lang.dmetaphone": "a phonetic filter vaultmem never uses",
            "whoosh.automata.fsa": "fuzzy terms: never used",
            "calendar": "whoosh's dates: never used",
            "queue": "whoosh's multiprocessing writer: never used",
            "asyncio": "the cached_property package's coroutine support",
        },
    )
