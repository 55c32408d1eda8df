"""The vault: how it is found, where things live in it, and the one safe-path function.

Every path vaultmem writes goes through `Vault.path()`, which refuses absolute names, `..`,
NUL bytes and symlinks that lead out of the vault. Every vault file vaultmem reads for a pack, a
hook, recall, `show`, MCP or an LLM request goes through `Vault.open_inside()` (and the
`read_bytes` / `read_text` / `read_note` built on it): the same check, on the file itself, so a
committed link to `/etc/shadow` is refused (`LinkOutsideVaultError`, exit 8) and never opened.
"""

from __future__ import annotations

import errno
import os
import stat
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from vaultmem.core.config import CONFIG_NAME, Config
from vaultmem.core.errors import (
    PathOutsideVaultError,
    RefusedError,
    ReviewRefusedError,
    UnknownAgentError,
    UsageError,
    VaultmemError,
    VaultNotFoundError,
)
from vaultmem.core.names import AGENT_NAME_RE
from vaultmem.core.pins import load_config
from vaultmem.core.records import record

if TYPE_CHECKING:
    from vaultmem.core.notes import Note

# no-follow: a link swapped in after the check is not followed; non-blocking: a fifo is not
# waited on (it is then refused as not a regular file)
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


def _first_link(steps: tuple[str, ...], *, folders: bool = False) -> str | None:
    """The one step check: the first of `steps` that is a symlink (with `folders`: anything but
    a folder) or cannot be looked at; None when there is none. One `lstat` per step, every
    time, so a link planted since the path was parsed is found.

    A step that does not exist ends the walk: nothing under it exists, so nothing on the way
    can be a link (a writer creates it as a folder). With `folders` (a read's known folders,
    which must all still be there) a missing step is itself the answer.
    """
    for step in steps:
        try:
            mode = os.lstat(step).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return step if folders else None
        except OSError:
            return step
        if stat.S_ISLNK(mode) or (folders and not stat.S_ISDIR(mode)):
            return step
    return None


class LinkOutsideVaultError(PathOutsideVaultError):
    """A vault file is a symlink (or sits under one) whose target is outside the vault, or is
    not a regular file: it is never read. Readers that build a pack skip it and say so."""

    def __init__(self, rel: str, target: str, why: str | None = None) -> None:
        super().__init__(
            f"{rel} {why or f'is a symlink to {target}, outside the vault'}: not read",
            f"replace the link with a real file (rm {rel}); `vaultmem status` lists such links",
        )
        self.rel = rel
        self.target = target


STATE_DIR = ".vaultmem"

MEMORY_DIR = "memory"
MEMORY_INDEX = "MEMORY.md"
AGENTS_DIR = "agents"
PEOPLE_DIR = "people"
NEXUS_DIR = "nexus"
IDENTITY = "IDENTITY.md"
PROFILE = "PROFILE.md"
REVIEW_PAGE = "Review.md"  # the review page for people (bank/review_page.py)


def validate_name(name: str, what: str = "agent") -> str:
    """Agent and reviewer names: lowercase letters, digits, `-`, `_`; at most 40 characters."""
    if not AGENT_NAME_RE.fullmatch(name):
        raise UsageError(
            f"invalid {what} name {name!r}",
            "use lowercase letters, digits, '-' and '_' (at most 40, starting with a letter or digit)",
        )
    return name


def find_vault(explicit: str | Path | None, start: Path | None = None) -> Path:
    """`--vault` / VAULTMEM_VAULT if given (passed in as `explicit`), else walk up to vaultmem.toml."""
    if explicit:
        root = Path(explicit).expanduser()
        if not (root / CONFIG_NAME).is_file():
            raise VaultNotFoundError(
                f"no vault at {root} (no {CONFIG_NAME})",
                f"create one with: vaultmem init {root} --agent NAME",
            )
        return root.resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise VaultNotFoundError(
        f"no vault found in {here} or any parent folder",
        "pass --vault PATH, set VAULTMEM_VAULT, or create one with: vaultmem init PATH --agent NAME",
    )


@record
class Vault:
    """An open vault: its root, its settings and its layout."""

    root: Path
    config: Config

    @classmethod
    def open(
        cls, explicit: Path | str | None = None, start: Path | None = None, **kw: bool
    ) -> Vault:  # lenient=True: a broken vaultmem.toml does not stop it (pins.load_config)
        root = find_vault(explicit, start)
        return cls(root=root, config=load_config(root / CONFIG_NAME, **kw))

    # --- safe paths ---------------------------------------------------------------------

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    @cached_property
    def _checked(self) -> dict[tuple[str, ...], tuple[Path, tuple[str, ...]]]:
        """The one cache of parsed paths, bounded: ("path", name) for `path`, ("state", *parts)
        for `state`, ("read", folder) for a folder `open_inside` resolved inside the vault ->
        (the path, or the folder's real location; the path of every step below the root down
        to it). Only parsing and resolving are remembered: every call still checks each step
        with `_first_link`. An append asks for seven; a pack reads 200 facts from one folder."""
        return {}

    def _remember(self, key: tuple[str, ...], path: Path, steps: tuple[str, ...]) -> None:
        if len(self._checked) >= 1024:
            self._checked.clear()
        self._checked[key] = (path, steps)

    def path(self, rel: str | PurePosixPath) -> Path:
        """Resolve a vault-relative name to a path that is guaranteed to stay inside the vault."""
        text = str(rel)
        key = ("path", text)
        hit = self._checked.get(key)
        if hit is None:
            parts = self._plain_parts(text)
            below = [os.fspath(self.root).rstrip(os.sep)]
            for part in parts:
                below.append(below[-1] + os.sep + part)
            hit = (self.root.joinpath(*parts), tuple(below[1:]))
            self._remember(key, *hit)
        candidate, steps = hit
        if _first_link(steps) is None:
            # no step below the root is a link: the real location is inside the real root,
            # which is what resolving the whole path (below) would find, without its cost
            return candidate
        # Resolve symlinks on the way (including the file itself): the real location must be
        # inside the vault's real root, so a link pointing elsewhere is never written through.
        real = candidate.resolve()
        if real != self.real_root and self.real_root not in real.parents:
            raise PathOutsideVaultError(
                f"path {text!r} leads outside the vault (through a symlink to {real})",
                "vaultmem never writes outside the vault; replace the symlink with a folder",
            )
        return candidate

    @staticmethod
    def _plain_parts(text: str) -> tuple[str, ...]:
        if "\x00" in text:
            raise PathOutsideVaultError(f"path {text!r} contains a NUL byte", "use a plain name")
        if "\\" in text:
            raise PathOutsideVaultError(
                f"path {text!r} contains a backslash", "use '/' between folders"
            )
        parts = PurePosixPath(text).parts
        if not text or PurePosixPath(text).is_absolute() or text.startswith("~"):
            raise PathOutsideVaultError(
                f"path {text!r} is not relative to the vault",
                "name files relative to the vault root",
            )
        if any(part == ".." for part in parts):
            raise PathOutsideVaultError(f"path {text!r} climbs out with '..'", "remove the '..'")
        return parts

    def inside(self, path: Path) -> bool:
        """Whether `path`, every link on the way (and the file itself) resolved, is in the vault."""
        real = os.path.realpath(path)
        root = str(self.real_root)
        return real == root or real.startswith(root + os.sep)

    def open_inside(self, path: Path) -> BinaryIO:
        """Open a vault file for reading through the one inside-the-vault check.

        The file's real location (links resolved, chains too) must be inside the vault and a
        regular file; it is opened at that real location with no-follow semantics, so a link
        swapped in after the check is not followed either. Otherwise `LinkOutsideVaultError`
        (exit 8), naming the file and where it leads; FileNotFoundError when it does not exist.
        """
        return os.fdopen(self._open_fd(path), "rb")

    def _open_fd(self, path: Path | str) -> int:
        """`open_inside`'s check, as a file descriptor. A file in a folder resolved before is
        checked by one `lstat` per folder below the vault's root (each still a folder, not a
        link: exactly what resolving the path would find) and opened no-follow; a file that is
        a link fails that open and takes the full resolution, as does everything else."""
        text = os.fspath(path)
        folder, name = os.path.split(text)
        plain = name not in ("", ".", "..")
        known = self._checked.get(("read", folder)) if plain else None
        if known is not None and _first_link(known[1], folders=True) is None:
            where = os.fspath(known[0]) + os.sep + name
            try:
                fd = os.open(where, _READ_FLAGS)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EMLINK):
                    raise
            else:
                return self._regular(fd, path, where)
        real = os.path.realpath(text)
        root = str(self.real_root)
        if real != root and not real.startswith(root + os.sep):
            raise LinkOutsideVaultError(self.rel_unresolved(Path(path)), real)
        fd = os.open(real, _READ_FLAGS)
        try:
            if plain and folder and not stat.S_ISLNK(os.lstat(text).st_mode):
                # the file is no link, so its folder resolved to where it now lies
                real_folder = real.rpartition(os.sep)[0]
                chain: list[str] = []
                step = real_folder
                while step != root and len(step) > len(root):
                    chain.append(step)
                    step = step.rpartition(os.sep)[0]
                self._remember(("read", folder), Path(real_folder), tuple(reversed(chain)))
        except OSError:
            pass
        return self._regular(fd, path, real)

    def _regular(self, fd: int, path: Path | str, real: str) -> int:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                rel = self.rel_unresolved(Path(path))
                raise LinkOutsideVaultError(rel, real, f"is not a regular file ({real})")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read_bytes(self, path: Path, limit: int | None = None) -> bytes:
        """A vault file's bytes (at most `limit + 1` when given, so a caller sees it was cut),
        read through `open_inside`'s check."""
        fd = self._open_fd(path)
        try:
            want = -1 if limit is None else limit + 1
            chunks: list[bytes] = []
            got = 0
            while want < 0 or got < want:
                chunk = os.read(fd, (1 << 20) if want < 0 else min(want - got, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_text(self, path: Path, *, what: str = "file") -> str:
        """A vault file as UTF-8 text through `open_inside`; not UTF-8 is an IntegrityError."""
        from vaultmem.core.fsio import decode_text

        try:
            data = self.read_bytes(path)
        except (FileNotFoundError, PathOutsideVaultError):
            raise
        except OSError as exc:
            raise VaultmemError(
                f"cannot read {path}: {exc.strerror}", "check its permissions"
            ) from exc
        return decode_text(data, path, what)

    def read_note(self, path: Path) -> Note:
        """A frontmatter note read through `open_inside`."""
        from vaultmem.core import notes

        return notes.parse(self.read_text(path, what="note"))

    def state(self, *parts: str) -> Path:
        """A path under `.vaultmem/`, vaultmem's local state, checked like every other path:
        plain names only, and neither `.vaultmem` nor any folder or file under it may be a
        symlink (a vault shared through git can carry one that points anywhere). Refused with
        exit 8. Writers open the result with no-follow semantics too (core.fsio, core.locking).
        """
        key = ("state", *parts)
        hit = self._checked.get(key)
        if hit is None:
            for part in parts:
                if not part or part in (".", "..") or "/" in part or "\\" in part or "\x00" in part:
                    raise PathOutsideVaultError(
                        f"state path part {part!r} is not a plain name", "use a plain name"
                    )
            top = self.root / STATE_DIR
            steps = [os.fspath(top)]
            for part in parts:
                steps.append(steps[-1] + os.sep + part)
            hit = (top.joinpath(*parts), tuple(steps))
            self._remember(key, *hit)
        bad = _first_link(hit[1])
        if bad is not None:
            if not stat.S_ISLNK(os.lstat(bad).st_mode):  # cannot be looked at: say why
                raise PathOutsideVaultError(
                    f"{self.rel_unresolved(Path(bad))} changed while it was checked", "try again"
                )
            raise PathOutsideVaultError(
                f"{self.rel_unresolved(Path(bad))} is a symlink; vaultmem never reads or "
                "writes its state through one",
                f"remove the link (rm {bad}); vaultmem rebuilds what it needs",
            )
        return hit[0]

    def rel_unresolved(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def rel(self, path: Path) -> str:
        """A path as shown to people and agents: relative to the vault root, with '/'."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.resolve().relative_to(self.real_root).as_posix()

    # --- layout -------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def memory_index(self) -> Path:
        return self.path(f"{MEMORY_DIR}/{MEMORY_INDEX}")

    def agent_dir(self, agent: str) -> Path:
        return self.path(f"{AGENTS_DIR}/{validate_name(agent)}")

    def identity(self, agent: str) -> Path:
        return self.agent_dir(agent) / IDENTITY

    def agent_memory_index(self, agent: str) -> Path:
        return self.agent_dir(agent) / MEMORY_INDEX

    def memory_dir(self, agent: str | None = None) -> Path:
        """Where facts live: `memory/` (shared) or `agents/<agent>/memory/`."""
        return self.path(MEMORY_DIR) if agent is None else self.agent_dir(agent) / MEMORY_DIR

    def index_for(self, agent: str | None = None) -> Path:
        return self.memory_index if agent is None else self.agent_memory_index(agent)

    def profile(self, agent: str | None = None) -> Path:
        """The compact profile: `memory/PROFILE.md` (shared) or `agents/<agent>/PROFILE.md`."""
        if agent is None:
            return self.path(f"{MEMORY_DIR}/{PROFILE}")
        return self.path(f"{AGENTS_DIR}/{self.require_agent(agent)}/{PROFILE}")

    def bank_dir(self, agent: str) -> Path:
        return self.agent_dir(agent) / "bank"

    def checkpoint(self, agent: str) -> Path:
        return self.agent_dir(agent) / "checkpoint.md"

    def working(self, agent: str) -> Path:
        """The agent's working memory (private scratch with a time to live)."""
        return self.agent_dir(agent) / "working.md"

    def person_dir(self, name: str) -> Path:
        """`people/<name>/`: a reviewer's public signing keys."""
        return self.path(f"{PEOPLE_DIR}/{validate_name(name, 'reviewer')}")

    @property
    def nexus(self) -> Path:
        return self.path(NEXUS_DIR)

    @property
    def live_context(self) -> Path:
        return self.path(f"{NEXUS_DIR}/live-context.md")

    @property
    def project_state(self) -> Path:
        return self.path(f"{NEXUS_DIR}/project-state.md")

    @property
    def decisions(self) -> Path:
        return self.path(f"{NEXUS_DIR}/decisions.md")

    @property
    def archive(self) -> Path:
        """`nexus/archive/`: the live log's rotated months (`nexus/rotate.py`)."""
        return self.nexus / "archive"

    def live_archives(self) -> list[Path]:
        """Rotated months of the live log, oldest first."""
        return sorted(self.archive.glob("live-context-*.md")) if self.archive.is_dir() else []

    def chain_files(self, log: str) -> list[Path]:
        """All files one signed log's chains run through, in order: the live log's archives,
        then the live log (`live`); the decision log (`decisions`)."""
        return [*self.live_archives(), self.live_context] if log == "live" else [self.decisions]

    @property
    def digests(self) -> Path:
        """The folder of digest notes (`nexus/digests.py`)."""
        return self.path(f"{NEXUS_DIR}/digests")

    # --- agents -------------------------------------------------------------------------

    def known_agents(self) -> tuple[str, ...]:
        """Agents listed in vaultmem.toml, plus any with an identity file under agents/."""
        found = list(self.config.agents)
        folder = self.root / AGENTS_DIR
        if folder.is_dir():
            for child in sorted(folder.iterdir()):
                if (
                    child.name not in found
                    and AGENT_NAME_RE.fullmatch(child.name)
                    and (child / IDENTITY).is_file()
                ):
                    found.append(child.name)
        return tuple(found)

    def require_agent(self, agent: str | None) -> str:
        """The agent named by --agent / VAULTMEM_AGENT; exit 4 listing the known ones."""
        if agent and agent in self.config.agents:  # listed: known without listing agents/
            return validate_name(agent)
        known = self.known_agents()
        if not agent:
            raise UsageError(
                "this command needs an agent",
                f"pass --agent NAME or set VAULTMEM_AGENT (known: {', '.join(known) or 'none'})",
            )
        validate_name(agent)
        if agent not in known:
            raise UnknownAgentError(
                f"unknown agent {agent!r}",
                f"known agents: {', '.join(known) or 'none'}; add one with: vaultmem init --agent {agent}",
            )
        return agent

    def require_reviewer(self, name: str | None) -> str:
        """A person who may sign a resolution or a key: a reviewer listed in vaultmem.toml
        (and not an agent): refused for anyone else, with the reviewers listed."""
        listed = ", ".join(self.config.reviewers) or "none"
        if not name:
            raise UsageError(
                "resolve needs --agent NAME, or a person: --reviewer NAME",
                f"reviewers: {listed} (or set VAULTMEM_REVIEWER / default_reviewer)",
            )
        validate_name(name, "reviewer")
        if name not in self.config.reviewers or name in self.config.agents:
            raise RefusedError(
                f"refused: {name!r} is not a reviewer of this vault",
                f"reviewers: {listed}; add one with: vaultmem init --reviewer {name}",
            )
        return name


def refuse_acting_agent(acting_agent: str | None, what: str = "approvals") -> None:
    """The gate's first rule (exit 8): {what} come from people, never from an acting agent."""
    if acting_agent:
        raise ReviewRefusedError(
            f"refused: an agent ({acting_agent}) is acting; {what} come from people",
            "a person runs this without --agent and with VAULTMEM_AGENT unset",
        )


def resolve_reviewer(vault: Vault, reviewer: str | None, *, acting_agent: str | None) -> str:
    """The person reviewing (facts, keys), or ReviewRefusedError (exit 8).

    Refused when an agent is acting (`--agent` / VAULTMEM_AGENT), when the name is an agent's
    or is not listed under `reviewers`. A guard against mistakes and against an agent
    following instructions literally, not a security boundary (README, Threat model).

    This is the one rule of the gate: a bank fact's author is always the agent whose bank holds
    it (`bank.model`), and no agent's name passes here, so nobody reviews their own proposal.
    """
    listed = ", ".join(vault.config.reviewers) or "none"
    refuse_acting_agent(acting_agent)
    name = reviewer or vault.config.default_reviewer
    if not name:
        raise UsageError(
            "who is reviewing?",
            f"pass --reviewer NAME (reviewers: {listed}), set VAULTMEM_REVIEWER, "
            "or default_reviewer in vaultmem.toml",
        )
    validate_name(name, "reviewer")
    if name in vault.known_agents():
        raise ReviewRefusedError(
            f"refused: {name!r} is an agent; agents never approve",
            f"reviewers are people listed in vaultmem.toml ({listed})",
        )
    if name not in vault.config.reviewers:
        raise ReviewRefusedError(
            f"refused: {name!r} is not a reviewer of this vault",
            f"reviewers: {listed}; add one with: vaultmem init --reviewer {name}",
        )
    return name
