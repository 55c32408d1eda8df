"""Vault health: `vaultmem status` (and, with later layers, verify/repair).

Problems are values, not exceptions: a report lists every one it finds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from vaultmem.core.errors import PathOutsideVaultError, VaultmemError
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.memory import facts, lines


@record
class Problem:
    path: str
    kind: str  # "broken-frontmatter", "bad-encoding", "missing-target", "unindexed-fact", ...
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class Waiting:
    """Something only a person can do, for whom, and the command (where it runs, if not here)."""

    who: str
    what: str
    command: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class StatusReport:
    vault: str
    agents: tuple[str, ...]
    reviewers: tuple[str, ...]
    language: str
    facts_by_type: dict[str, int]
    facts_by_status: dict[str, int]
    problems: tuple[Problem, ...] = field(default_factory=tuple)
    waiting: tuple[Waiting, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "agents": list(self.agents),
            "reviewers": list(self.reviewers),
            "language": self.language,
            "facts_by_type": self.facts_by_type,
            "facts_by_status": self.facts_by_status,
            "problems": [p.to_dict() for p in self.problems],
            "waiting": [w.to_dict() for w in self.waiting],
        }


def memory_problems(vault: Vault) -> list[Problem]:
    """Broken fact files, index lines pointing nowhere, facts no index lists."""
    problems: list[Problem] = []
    indexed: set[str] = set()
    scopes: list[str | None] = [None, *vault.known_agents()]
    for scope in scopes:
        index = vault.index_for(scope)
        rel_index = vault.rel(index)
        try:
            targets = lines.index_targets(vault, scope)
        except VaultmemError as exc:
            problems.append(Problem(rel_index, "bad-encoding", exc.message))
            continue
        for line_no, target, _line in targets:
            candidates = (
                [target] if "/" in target else [f"{vault.rel(vault.memory_dir(scope))}/{target}"]
            )
            found = next((c for c in candidates if (vault.root / f"{c}.md").is_file()), None)
            if found is None:
                problems.append(
                    Problem(
                        rel_index,
                        "missing-target",
                        f"links to [[{target}]], which does not exist",
                        line_no,
                    )
                )
            else:
                indexed.add(f"{found}.md")
    for path, _agent in facts.fact_files(vault):
        rel = vault.rel(path)
        try:
            note = vault.read_note(path)
        except VaultmemError as exc:
            problems.append(Problem(rel, "bad-encoding", exc.message))
            continue
        if not note.ok:
            problems.append(
                Problem(rel, "broken-frontmatter", note.error or "unreadable frontmatter")
            )
        elif rel not in indexed:
            problems.append(
                Problem(
                    rel,
                    "unindexed-fact",
                    "no MEMORY.md line links to this fact; agents will not see it",
                )
            )
    return problems


def intent_problems(vault: Vault) -> list[Problem]:
    """Multi-file writes a killed process left half done (`core/intents.py`)."""
    from vaultmem.core import intents

    return [
        Problem(
            vault.rel(path),
            "half-done",
            f"a {data['kind']} write was cut short ({data.get('note') or data.get('bank') or data.get('section') or ''}); "
            "vaultmem repair (or the next such command) finishes or undoes it",
        )
        for path, data in intents.pending(vault)
    ]


def recover_half_done(vault: Vault) -> list[str]:
    """Finish or undo every half-done multi-file write, each under its own lock."""
    from vaultmem.bank import review, store
    from vaultmem.core.locking import exclusive, lock_path
    from vaultmem.nexus import rotate, state

    done = rotate.recover(vault)
    with facts.index_lock(vault):
        done += facts.recover(vault)
    with store.bank_lock(vault):
        done += review.recover(vault)
    with exclusive(lock_path(vault, "project-state"), vault.config.log.lock_timeout, what="state"):
        done += state.recover(vault)
    return done


def identity_problems(vault: Vault) -> list[Problem]:
    problems = []
    for agent in vault.known_agents():
        path = vault.identity(agent)
        rel = vault.rel(path)
        if not path.exists():
            problems.append(Problem(rel, "missing-identity", f"agent {agent} has no identity file"))
            continue
        try:
            note = vault.read_note(path)
        except PathOutsideVaultError as exc:
            problems.append(Problem(rel, "symlink-outside", exc.message))
            continue
        except VaultmemError as exc:
            problems.append(Problem(rel, "bad-encoding", exc.message))
            continue
        if not note.ok:
            problems.append(
                Problem(rel, "broken-frontmatter", note.error or "unreadable frontmatter")
            )
    return problems


def conflict_problems(vault: Vault) -> list[Problem]:
    """Conflict markers a git merge left in a file vaultmem owns: a problem for a person to
    settle, never text to edit around (`state set` refuses such a file, exit 5)."""
    from vaultmem.nexus.state import CONFLICT_HINT, find_conflict_markers

    return [
        Problem(
            m.path,
            "conflict-markers",
            CONFLICT_HINT,
            m.line,
        )
        for m in find_conflict_markers(vault)
    ]


def waiting_for_people(vault: Vault, problems: list[Problem]) -> list[Waiting]:
    """What waits for a person, on every machine alike: keys to approve (on a machine with a
    reviewer's key), proposed facts to review, settings to accept here, merges to settle."""
    from vaultmem.bank.store import list_bank
    from vaultmem.nexus.keyring import public_keys

    out: list[Waiting] = []
    reviewers = list(vault.config.reviewers) or ["NAME"]
    keys = public_keys(vault)
    keyed = [r for r in reviewers if any(k.approved and k.agent == r for k in keys.values())]
    who = keyed[0] if keyed else reviewers[0]
    for key in keys.values():
        if not key.approved and key.agent not in vault.config.reviewers:
            out.append(
                Waiting(
                    f"{who} (on the machine that holds {who}'s signing key)",
                    f"approve {key.agent}'s key {key.key_id}",
                    f"vaultmem sync; vaultmem keys approve {key.key_id} --reviewer {who} "
                    "&& vaultmem sync",
                )
            )
    pending = list_bank(vault)
    if pending:
        agents = ", ".join(sorted({f.author for f in pending}))
        out.append(
            Waiting(
                "a reviewer",
                f"review {len(pending)} proposed fact(s) from {agents} (Review.md)",
                f"vaultmem promote --reviewer {who}",
            )
        )
    if any(p.kind == "pending-trust" for p in problems):
        out.append(
            Waiting(
                "a person on this machine",
                "accept the settings or keys a pull changed",
                "vaultmem trust && vaultmem trust accept",
            )
        )
    for path in sorted({p.path for p in problems if p.kind == "conflict-markers"}):
        out.append(
            Waiting(
                "a person",
                f"settle the two versions a merge kept in {path}",
                f"edit {path} (keep the right text, delete the <<<<<<< ======= >>>>>>> lines), "
                "then vaultmem sync",
            )
        )
    return out


def status(vault: Vault) -> StatusReport:
    known = facts.memories(vault)
    by_type = Counter(f.type or "(none)" for f in known)
    by_status = Counter(f.status for f in known)
    problems = identity_problems(vault) + memory_problems(vault)
    from vaultmem.nexus.verify import tail_problems  # layer 3: torn log tails (cheap, no crypto

    problems += [Problem(p.path, p.kind, p.message) for p in tail_problems(vault)]
    problems += conflict_problems(vault)
    from vaultmem.nexus.trust import changes  # layer 3: settings and keys not accepted here

    problems += [
        Problem(c.path, "pending-trust", f"{c.message}; see: vaultmem trust")
        for c in changes(vault)
    ]
    from vaultmem.search.manifest import index_problems  # layer 4: no whoosh import
    from vaultmem.search.walk import walk

    seen = {(p.path, p.kind) for p in problems}
    # links out of the vault, found by the stat walk itself (no index needed): never read
    links = [Problem(rel, kind, msg) for rel, (kind, msg) in walk(vault)[1].items()]
    for p in [*links, *(Problem(p.path, p.kind, p.message) for p in index_problems(vault))]:
        if (p.path, p.kind) not in seen:
            seen.add((p.path, p.kind))
            problems.append(p)
    return StatusReport(
        vault=str(vault.root),
        agents=vault.known_agents(),
        reviewers=vault.config.reviewers,
        language=vault.config.language,
        facts_by_type=dict(sorted(by_type.items())),
        facts_by_status=dict(sorted(by_status.items())),
        problems=tuple(problems),
        waiting=tuple(waiting_for_people(vault, problems)),
    )
