"""Trust pins: what this machine trusts about a vault, pinned on first use like SSH's known_hosts.

A vault's files arrive through git from strangers, so the anchors of its trust are kept on this
machine, in `VAULTMEM_HOME/trust/<digest of the vault root's real path>.json` (mode 0600):

- the security settings it enforces (`require_signatures`, `[secrets] policy`, `reviewers`,
  `agents`), pinned and applied by `core/config.py` when the config is read;
- the public keys of the reviewers, whose signatures approve agents' keys;
- each agent's first key (the one key of an agent no signature vouches for).

The first time this machine sees a vault it pins what is there (the settings when the config is
first read, the keys the first time keys are judged; `init` and `create_key` pin what they make).
Afterwards a change in the files takes effect only when a person on this machine accepts it
(`vaultmem trust accept`); until then `pending()` lists it, and `verify` and `status` report it.
See docs/FORMAT.md, "Trust pins".
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from vaultmem.core import config
from vaultmem.core import pins as pinfile
from vaultmem.core.errors import ConfigError, VaultmemError
from vaultmem.core.records import evolve, field, record
from vaultmem.nexus.signing import (
    KEYS_FILE,
    PublicKey,
    approval_statement,
    key_statement,
    read_key_lines,
    verify_raw,
)

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault


@record
class Anchors:
    """The keys this machine trusts without a signature."""

    reviewer_keys: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> id -> pub
    first_keys: dict[str, str] = field(default_factory=dict)  # agent -> key id


@record
class Change:
    """One difference between the pins and the files."""

    path: str  # vault-relative file it is in
    message: str

    def line(self) -> str:
        return f"{self.path}: {self.message}"


@record
class TrustReport:
    """`vaultmem trust`: what is pinned, what the files say, and what differs."""

    pins_file: str
    pinned: dict[str, Any]
    current: dict[str, Any]
    changes: tuple[Change, ...]
    accepted: bool = False

    @property
    def ok(self) -> bool:
        return not self.changes

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "accepted": self.accepted,
            "pins_file": self.pins_file,
            "pinned": self.pinned,
            "current": self.current,
            "changes": [c.__dict__ for c in self.changes],
        }


# --- what the files say ----------------------------------------------------------------------


def _file_settings(vault: Vault) -> dict[str, Any]:
    return pinfile.security_of(pinfile.load_config(vault.root / config.CONFIG_NAME, pinned=False))


def _key_lines(vault: Vault, top: str, name: str) -> list[PublicKey]:
    path = vault.root / top / name / KEYS_FILE
    return read_key_lines(path, name)[0] if path.is_file() else []


def _agent_folders(vault: Vault) -> list[str]:
    from vaultmem.core.names import AGENT_NAME_RE

    folder = vault.root / "agents"
    if not folder.is_dir():
        return []
    return [
        c.name
        for c in sorted(folder.iterdir())
        if AGENT_NAME_RE.fullmatch(c.name) and (c / "keys.md").is_file()
    ]


def _file_keys(vault: Vault, reviewers: list[str]) -> dict[str, Any]:
    """The keys the files hold, in the form of the pins: every key line of each reviewer, the
    first key line of each agent."""
    people = {r: {k.key_id: k.public for k in _key_lines(vault, "people", r)} for r in reviewers}
    agents: dict[str, str] = {}
    for name in _agent_folders(vault):
        keys = _key_lines(vault, "agents", name)
        if keys:
            agents[name] = keys[0].key_id
    return {"reviewers": {r: k for r, k in people.items() if k}, "agents": agents}


# --- the pins --------------------------------------------------------------------------------


def _pins(vault: Vault) -> dict[str, Any]:
    """The pin file, with the keys pinned now if this machine never pinned them (first use)."""
    pins = pinfile.read_pins(vault.root)
    if pins is None:
        pins = pinfile.first_pins(vault.root, vault.config)
        with contextlib.suppress(OSError, VaultmemError):
            pinfile.write_pins(vault.root, pins, create=True)
        pins = pinfile.read_pins(vault.root) or pins
    if not isinstance(pins.get("keys"), dict):
        listed = pins["settings"].get("reviewers")
        pins["keys"] = _file_keys(vault, list(listed) if isinstance(listed, list) else [])
        with contextlib.suppress(OSError, VaultmemError):
            pinfile.write_pins(vault.root, pins)  # a read-only home: trusted for this run only
    return pins


def anchors(vault: Vault) -> Anchors:
    keys = _pins(vault)["keys"]
    reviewers = keys.get("reviewers") if isinstance(keys.get("reviewers"), dict) else {}
    agents = keys.get("agents") if isinstance(keys.get("agents"), dict) else {}
    return Anchors(
        {str(r): {str(k): str(p) for k, p in ks.items()} for r, ks in reviewers.items()},
        {str(a): str(k) for a, k in agents.items()},
    )


def _update(vault: Vault, change: Any) -> None:
    """Read, change and write the pins under one lock: two processes pinning at once (two
    `keys create`) must not lose one another's pin."""
    from vaultmem.core.locking import exclusive, lock_path

    with exclusive(lock_path(vault, "trust"), vault.config.log.lock_timeout, what="trust pins"):
        pins = _pins(vault)
        change(pins)
        pinfile.write_pins(vault.root, pins)


def pin_reviewer_key(vault: Vault, reviewer: str, key_id: str, public: str) -> None:
    """A person's key made on this machine is trusted here."""

    def add(pins: dict[str, Any]) -> None:
        pins["keys"].setdefault("reviewers", {}).setdefault(reviewer, {})[key_id] = public

    _update(vault, add)


def pin_first_key(vault: Vault, agent: str, key_id: str) -> None:
    """An agent's first key made on this machine is its anchor here (unless one is pinned)."""

    def add(pins: dict[str, Any]) -> None:
        pins["keys"].setdefault("agents", {}).setdefault(agent, key_id)

    _update(vault, add)


def pin_names(vault: Vault, *, agents: tuple[str, ...], reviewers: tuple[str, ...]) -> None:
    """`init` added these names on this machine: pin them (and nothing else that changed)."""

    def add(pins: dict[str, Any]) -> None:
        settings = pins["settings"]
        for key, names in (("agents", agents), ("reviewers", reviewers)):
            listed = list(settings.get(key) or [])
            settings[key] = listed + [n for n in names if n not in listed]

    if agents or reviewers:
        _update(vault, add)


# --- judging keys ---------------------------------------------------------------------------


class Judge:
    """Judges keys files against this machine's trust anchors (nexus/trust.py), reading each
    reviewer's keys file at most once."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.anchors = anchors(vault)
        self._reviewers: dict[str, dict[str, str]] = {}

    def reviewer_keys(self, reviewer: str) -> dict[str, str]:
        """The keys of `reviewer` this machine trusts (key id -> public key): pinned, or
        vouched for by a trusted key of the same person."""
        if reviewer not in self._reviewers:
            self._reviewers[reviewer] = {}
            path = self.vault.root / "people" / reviewer / KEYS_FILE
            keys = read_key_lines(path, reviewer)[0] if path.is_file() else []
            judged = self.judge(keys, reviewer, person=True)
            trusted = dict(self.anchors.reviewer_keys.get(reviewer, {}))
            trusted.update({k.key_id: k.public for k in judged if k.approved})
            self._reviewers[reviewer] = trusted
        return self._reviewers[reviewer]

    def judge(self, keys: list[PublicKey], owner: str, *, person: bool) -> list[PublicKey]:
        """Each key with `approved` set. An agent's key: its pinned first key, or vouched for
        by an earlier approved key of the same agent, or approved by a pinned reviewer's
        signature. A person's key: pinned on this machine, or vouched for by an approved one."""
        out: list[PublicKey] = []
        approved: dict[str, PublicKey] = {}
        pinned = self.anchors.reviewer_keys.get(owner, {}) if person else {}
        first = None if person else self.anchors.first_keys.get(owner)
        for n, key in enumerate(keys):
            verdict: tuple[bool, str]
            if person and pinned.get(key.key_id) == key.public:
                verdict = (True, "pinned on this machine")
            elif not person and key.key_id == first:
                verdict = (True, "first key")
            elif not person and first is None and n == 0:
                verdict = (
                    False,
                    f"the first key of {owner} is not pinned on this machine; if it is theirs, "
                    "a person here accepts it with: vaultmem trust accept",
                )
            elif key.by_key:
                verdict = self._vouched(key, approved)
            elif key.reviewer and not person:
                verdict = self._reviewed(key)
            elif person:
                verdict = (
                    False,
                    f"a key of {owner} this machine has not pinned; a person here checks it "
                    "(vaultmem trust) and accepts it with: vaultmem trust accept",
                )
            else:
                verdict = (
                    False,
                    "not signed by an earlier key of the agent, nor approved by a reviewer",
                )
            judged = evolve(key, approved=verdict[0], approval=verdict[1])
            out.append(judged)
            if judged.approved:
                approved[judged.key_id] = judged
        return out

    @staticmethod
    def _vouched(key: PublicKey, approved: dict[str, PublicKey]) -> tuple[bool, str]:
        voucher = approved.get(key.by_key or "")
        if voucher is None:
            return (False, f"vouched for by {key.by_key}, which is not an earlier approved key")
        statement = key_statement(key.agent, key.key_id, key.public, key.device)
        if key.key_sig and verify_raw(voucher.public, statement, key.key_sig):
            return (True, f"signed by {key.by_key}")
        return (False, f"the signature by {key.by_key} does not match")

    def _reviewed(self, key: PublicKey) -> tuple[bool, str]:
        who = key.reviewer or ""
        again = f"vaultmem keys approve {key.key_id} --reviewer {who}"
        if who not in self.vault.config.reviewers:
            return (False, f"{who} is not a reviewer of this vault (as this machine pins it)")
        if not (key.reviewer_key and key.reviewer_sig):
            return (
                False,
                f"'approved-by reviewer {who}' is text without a signature, which proves "
                f"nothing; if {who} approves it, {who} runs: {again}",
            )
        public = self.reviewer_keys(who).get(key.reviewer_key)
        if public is None:
            return (
                False,
                f"approved with {key.reviewer_key}, which is not a key of {who} this machine "
                f"trusts (see: vaultmem trust); or {who} runs: {again}",
            )
        statement = approval_statement(key.agent, key.key_id, key.public, key.device, who)
        if verify_raw(public, statement, key.reviewer_sig):
            return (True, f"reviewer {who} ({key.reviewer_key})")
        return (False, f"the signature by reviewer {who} does not match; {who} runs: {again}")


# --- what differs ----------------------------------------------------------------------------


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return repr(value) if isinstance(value, str) else str(value)


def _setting_changes(pinned: dict[str, Any], current: dict[str, Any]) -> list[Change]:
    toml = config.CONFIG_NAME
    out: list[Change] = []
    labels = {
        "require_signatures": "[log] require_signatures",
        "secrets_policy": "[secrets] policy",
    }
    for key, label in labels.items():
        if pinned.get(key) != current.get(key):
            out.append(
                Change(
                    toml,
                    f"{label} is {_show(current.get(key))} in the file, pinned "
                    f"{_show(pinned.get(key))} on this machine",
                )
            )
    for key in ("reviewers", "agents"):
        was = list(pinned.get(key) or [])
        now = list(current.get(key) or [])
        added = [n for n in now if n not in was]
        gone = [n for n in was if n not in now]
        if added:
            out.append(
                Change(toml, f"{key}: {', '.join(added)} added (not trusted until accepted)")
            )
        if gone:
            out.append(Change(toml, f"{key}: {', '.join(gone)} removed"))
    return out


def _key_changes(vault: Vault, pins: dict[str, Any], current: dict[str, Any]) -> list[Change]:
    out: list[Change] = []
    keys = pins["keys"]
    pinned_people: dict[str, dict[str, str]] = keys.get("reviewers") or {}
    judge = Judge(vault)
    names = list(dict.fromkeys([*(current.get("reviewers") or []), *pinned_people]))
    for name in names:
        rel = f"people/{name}/keys.md"
        pinned = pinned_people.get(name, {})
        lines = _key_lines(vault, "people", name)
        vouched = {k.key_id for k in judge.judge(lines, name, person=True) if k.approved}
        for key in lines:
            if pinned.get(key.key_id) == key.public or key.key_id in vouched:
                continue
            out.append(
                Change(rel, f"key {key.key_id} of reviewer {name} is not pinned (line {key.line})")
            )
    first: dict[str, str] = keys.get("agents") or {}
    for name in _agent_folders(vault):
        lines = _key_lines(vault, "agents", name)
        rel = f"agents/{name}/keys.md"
        if not lines:
            continue
        if name not in first:
            out.append(Change(rel, f"the first key {lines[0].key_id} of {name} is not pinned"))
        elif all(k.key_id != first[name] for k in lines):
            out.append(
                Change(
                    rel,
                    f"the pinned first key {first[name]} of {name} is no longer in the file; "
                    f"its first key line is {lines[0].key_id}",
                )
            )
    return out


def report(vault: Vault, *, lenient: bool = False) -> TrustReport:
    """The pins, the files, and every difference (`vaultmem trust`). `lenient`: a
    vaultmem.toml that does not pass its checks is one change (its problem), the pinned
    settings standing for the file's (`accept` is strict: an invalid file is never pinned)."""
    pins = _pins(vault)
    broken: list[Change] = []
    try:
        settings = _file_settings(vault)
    except ConfigError as exc:
        if not lenient:
            raise
        settings = dict(pins["settings"])
        broken.append(Change(config.CONFIG_NAME, exc.message))
    current = {"settings": settings, "keys": _file_keys(vault, settings["reviewers"])}
    changes = _setting_changes(pins["settings"], settings) + _key_changes(vault, pins, settings)
    changes = [*broken, *changes]
    pinned = {"settings": pins["settings"], "keys": pins["keys"]}
    return TrustReport(str(pinfile.pins_path(vault.root)), pinned, current, tuple(changes))


def changes(vault: Vault) -> tuple[Change, ...]:
    """Every change in the files that this machine has not accepted; `verify` and `status`
    report each as a `pending-trust` problem of its file."""
    try:
        return report(vault).changes
    except ConfigError as exc:  # the file no longer parses: that is a change too
        return (Change(config.CONFIG_NAME, exc.message),)


def pending(vault: Vault) -> tuple[str, ...]:
    """One human-readable line per change in the files that this machine has not accepted
    (`vaultmem trust accept`), `PATH: what changed`; empty when nothing is pending. The sync
    pipeline calls it after a merge."""
    return tuple(c.line() for c in changes(vault))


def accept(vault: Vault, *, acting_agent: str | None) -> TrustReport:
    """A person on this machine accepts the files' security settings and keys: they become the
    pins. Refused (exit 8) while an agent is acting. Pinned reviewer keys stay pinned for the
    reviewers still listed (old approvals keep verifying); a pinned first key stays while its
    line is in the agent's keys file."""
    from vaultmem.core.vault import Vault, refuse_acting_agent

    refuse_acting_agent(acting_agent, "trust changes")
    before = report(vault)
    settings = before.current["settings"]
    files = before.current["keys"]

    def take(pins: dict[str, Any]) -> None:
        from vaultmem.core.clock import stamp

        old_people: dict[str, dict[str, str]] = pins["keys"].get("reviewers") or {}
        people = {
            r: {**old_people.get(r, {}), **files["reviewers"].get(r, {})}
            for r in settings["reviewers"]
        }
        old_first: dict[str, str] = pins["keys"].get("agents") or {}
        first = dict(files["agents"])
        for name, kid in old_first.items():
            if name in first and any(k.key_id == kid for k in _key_lines(vault, "agents", name)):
                first[name] = kid
        pins["settings"] = settings
        pins["keys"] = {"reviewers": {r: k for r, k in people.items() if k}, "agents": first}
        pins["accepted_at"] = stamp()

    _update(vault, take)
    after = report(Vault.open(vault.root))
    return TrustReport(after.pins_file, after.pinned, after.current, before.changes, accepted=True)
