"""Mutation run over the checks vaultmem's trust rests on.

A mutant is a one-line change to the code that switches a check off (or weakens it). A mutant that
no test catches is a promise nobody checks. Each mutant below names the promise it breaks; the run
applies it, runs the tests most likely to catch it, then (if they all pass) the quick suite, and
puts the file back whatever happens.

    python scripts/mutate.py                 # every mutant: targeted tests, then the quick suite
    python scripts/mutate.py --list          # the mutants and whether each still applies
    python scripts/mutate.py -k verify       # only mutants whose name contains "verify"
    python scripts/mutate.py --full          # survivors are tried on the whole suite too
    python scripts/mutate.py --targeted      # only each mutant's targeted tests (a first pass)

It prints one line per mutant (killed / SURVIVED / equivalent / stale) and writes the same as JSON to
bench/out/mutants.json. A mutant is *stale* when its line is no longer in the code, or not once:
update it. The run checks every chosen mutant before it applies any, and stops (exit 2, nothing
run) on a stale one.
A survivor that is truly equivalent (no behaviour can tell it apart) carries `equivalent=` with the
reason, and is reported as such instead of as a failure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
STRANGER = "tests/integration/test_sync_stranger.py"
INCOMING = "tests/integration/test_sync_checks.py"
STRANGER_CODE = "tests/integration/test_sync_stranger_code.py"
SPAWN = "tests/test_spawn.py"
WORKTREE = "tests/integration/test_sync_checks.py"


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    find: str  # must occur exactly once in the file
    replace: str
    promise: str  # what the mutant breaks, in words
    tests: tuple[str, ...] = ()  # pytest targets tried first (slow ones included)
    equivalent: str = ""  # why no behaviour tells it apart, when that is so


MUTANTS: list[Mutant] = [
    # --- paths: nothing is written or read outside the vault -----------------------------------
    Mutant(
        "path-dotdot",
        "vaultmem/core/vault.py",
        'if any(part == ".." for part in parts):',
        "if False:",
        "a path with '..' is refused as such",
        ("tests/test_vault.py",),
    ),
    Mutant(
        "path-symlink-out",
        "vaultmem/core/vault.py",
        "if real != self.real_root and self.real_root not in real.parents:",
        "if False:",
        "a path through a symlink out of the vault is refused",
        ("tests/test_vault.py", "tests/test_trust.py"),
    ),
    Mutant(
        "read-known-folder",
        "vaultmem/core/vault.py",
        "if known is not None and _first_link(known[1], folders=True) is None:",
        "if known is not None:",
        "a folder resolved before is checked again (still a folder, not a link) on every read",
        ("tests/test_links.py",),
    ),
    Mutant(
        "state-symlink",
        "vaultmem/core/vault.py",
        "bad = _first_link(hit[1])",
        "bad = None",
        "no folder or file under .vaultmem/ is reached through a symlink",
        ("tests/test_lock_wait.py",),
    ),
    Mutant(
        "path-absolute",
        "vaultmem/core/vault.py",
        'if not text or PurePosixPath(text).is_absolute() or text.startswith("~"):',
        "if not text:",
        "an absolute or home-relative path is refused",
        ("tests/test_vault.py",),
    ),
    # --- the gate: agents propose, people decide -----------------------------------------------
    Mutant(
        "gate-acting-agent",
        "vaultmem/core/vault.py",
        "    if acting_agent:\n        raise ReviewRefusedError(",
        "    if False:\n        raise ReviewRefusedError(",
        "an acting agent cannot review",
        ("tests/test_promote.py", "tests/test_trust.py"),
    ),
    Mutant(
        "gate-agent-name",
        "vaultmem/core/vault.py",
        "if name in vault.known_agents():",
        "if False:",
        "an agent's name is never a reviewer, so nobody reviews their own proposal",
        ("tests/test_promote.py",),
    ),
    Mutant(
        "gate-listed-reviewer",
        "vaultmem/core/vault.py",
        "if name not in vault.config.reviewers:",
        "if False:",
        "only people listed under `reviewers` review",
        ("tests/test_promote.py",),
    ),
    # --- the signed logs -----------------------------------------------------------------------
    # An entry's own checks (hash, id, key owner, signature, device, approval) are
    # nexus/shown.py's `entry_problem`: `verify` runs it on every entry (verify_files._scan_bytes,
    # hash_ok=None), a pack on those it shows. nexus/log.py's `head_ok` repeats them for the
    # chain heads an append anchors, and nexus/repair.py checks the hash before it restores an
    # entry from the journal; the mutants below break the copy verify uses, `entry_problem`.
    Mutant(
        "verify-hash",
        "vaultmem/nexus/shown.py",
        "if not (e.compute_hash() == e.hash if hash_ok is None else hash_ok):",
        "if not (True if hash_ok is None else hash_ok):",  # verify's case: hash_ok is None
        "an entry changed after it was written is reported (edited)",
        ("tests/test_log_integrity.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-signature",
        "vaultmem/nexus/shown.py",
        "    if not ok:\n",
        "    if False:\n",
        "a signature that does not match is reported (forged)",
        ("tests/test_signing.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-key-owner",
        "vaultmem/nexus/shown.py",
        "if pk.agent != e.agent:",
        "if False:",
        "an entry signed with another agent's key is reported (forged)",
        ("tests/test_log_integrity.py", "tests/test_signing.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-device-chain",
        "vaultmem/nexus/shown.py",
        "if pk.device != entry.device_of(e.id):",
        "if False:",
        "one machine's key cannot continue another machine's chain",
        ("tests/test_verify_forgery.py",),
    ),
    Mutant(
        "verify-anchored-heads",
        "vaultmem/nexus/verify.py",
        '    elif not target.hash.removeprefix("sha256:").startswith(prefix):',
        "    elif False:",
        "a rewrite of an entry another agent anchored is reported on a fresh clone",
        ("tests/test_verify_forgery.py",),
    ),
    Mutant(
        "verify-unapproved-key",
        "vaultmem/nexus/shown.py",
        "if not pk.approved:",
        "if False:",
        "every entry signed with a key nobody vouched for is named",
        ("tests/test_signing.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-forged-id",
        "vaultmem/nexus/shown.py",
        "if e.id != entry.entry_id(e.agent, e.seq, e.log, entry.device_of(e.id)):",
        "if False:",
        "an id that does not match its agent and sequence number is reported (forged)",
        ("tests/test_verify_forgery.py", "tests/test_log_integrity.py", "tests/test_trust.py"),
    ),
    # --- secrets -------------------------------------------------------------------------------
    Mutant(
        "secrets-github-token",
        "vaultmem/core/secrets.py",
        "ghp_",
        "ghx_",
        "a GitHub token is caught by the scanner",
        ("tests/test_secrets.py", "tests/test_secrets_corpus.py"),
    ),
    # --- the signature memo: a line stands for one signature this machine checked ------------
    Mutant(
        "memo-unkeyed",
        "vaultmem/nexus/memo.py",
        "return blake2b(raw, key=secret, digest_size=16).hexdigest()",
        'return blake2b(raw, key=b"", digest_size=16).hexdigest()',
        "a memo line is keyed with VAULTMEM_HOME's secret: an agent that writes .vaultmem/ "
        "cannot make a forged signature pass",
        ("tests/test_signing.py", "tests/test_verify_forgery.py"),
    ),
    Mutant(
        "memo-any-line",
        "vaultmem/nexus/memo.py",
        "        if k in self.known:\n",
        "        if self.known:\n",
        "a signature is taken as checked only when the memo holds its own line",
        ("tests/test_signing.py", "tests/test_verify_forgery.py"),
    ),
    Mutant(
        "memo-without-signature",
        "vaultmem/nexus/memo.py",
        'raw = f"{entry_hash}|{key_id}|{public}|{sig}".encode()',
        'raw = f"{entry_hash}|{key_id}|{public}".encode()',
        "a memo line covers the signature: another signature on the same entry is checked afresh",
        ("tests/test_signing.py", "tests/test_verify_forgery.py"),
    ),
    # --- the journal: what this machine appended ------------------------------------------------
    Mutant(
        "journal-replaced",
        "vaultmem/nexus/verify.py",
        "if found is not None and je.hash and found.hash != je.hash:",
        "if False:",
        "an entry this machine appended that the file now holds with another hash is reported",
        ("tests/test_trust.py", "tests/test_log_integrity.py"),
    ),
    Mutant(
        "journal-missing",
        "vaultmem/nexus/verify.py",
        "if not present and mid not in report.reported_missing and mid not in reported:",
        "if False:",
        "an entry this machine appended that is gone from the files is reported (missing)",
        ("tests/test_log_integrity.py", "tests/test_trust.py"),
    ),
    # --- chains ---------------------------------------------------------------------------------
    Mutant(
        "chain-prev",
        "vaultmem/nexus/verify.py",
        "if cur.prev != expected and agent not in index.forked:",
        "if False:",
        "an entry whose prev is not the hash of its agent's previous entry is reported",
        ("tests/test_log_integrity.py", "tests/test_verify_forgery.py", "tests/test_forks.py"),
    ),
    Mutant(
        "chain-gap",
        "vaultmem/nexus/verify.py",
        "            if seq > expected_next:\n",
        "            if False:\n",
        "a sequence number an agent's chain jumps over is reported (missing), with no journal",
        ("tests/test_log_integrity.py", "tests/test_verify_forgery.py"),
    ),
    # --- the ack rule: only a recipient's own ack closes an entry for it ---------------------
    Mutant(
        "ack-other-recipient",
        "vaultmem/nexus/coord.py",
        # `waiting_for` is the one open/acked rule: Index.inbox, prune and the packs use it
        "if a not in acked_by)",
        "if not acked_by)",
        "one recipient's ack closes an entry for that recipient only, not for the others",
        ("tests/test_coordination.py",),
    ),
    Mutant(
        "ack-own-entry",
        "vaultmem/nexus/coord.py",
        'if raw is not None and raw["agent"] != e.agent:',
        "if raw is not None:",
        "an agent's ack of its own entry is not counted in the coordination index",
        ("tests/test_coordination.py",),
    ),
    Mutant(
        "ack-own-pack",
        "vaultmem/app/pack/window.py",
        "if _author(a) != e.agent:",
        "if True:",
        "an agent's ack of its own entry does not make it look answered in others' packs",
        ("tests/test_coordination.py", "tests/test_context.py"),
    ),
    # --- secrets in names -----------------------------------------------------------------------
    Mutant(
        "secrets-identifiers-refuse-only",
        "vaultmem/core/secrets.py",
        "for field, value in (identifiers or {}).items():",
        'for field, value in ((identifiers or {}) if policy == "refuse" else {}).items():',
        "a secret in a name (fact, tag, channel, section, key) is refused under every policy",
        ("tests/test_secret_names.py",),
    ),
    # --- the memory gate: an agent changes only its own memory ------------------------------
    Mutant(
        "gate-shared-write",
        "vaultmem/memory/gate.py",
        'if agent and scope != "agent":',
        "if False:",
        "an acting agent cannot write shared memory (it proposes with retain)",
        ("tests/test_memory_gate.py",),
    ),
    Mutant(
        "gate-owner-only",
        "vaultmem/memory/gate.py",
        "if owner == agent and author == agent:",
        "if owner == agent:",
        "an agent cannot change a note a person wrote, even in its own memory folder",
        ("tests/test_memory_gate.py",),
    ),
    Mutant(
        "gate-author-only",
        "vaultmem/memory/gate.py",
        "if owner == agent and author == agent:",
        "if author == agent:",
        "an agent cannot change shared memory, even a note it wrote",
        ("tests/test_memory_gate.py",),
    ),
    # --- sync: what arrives through git is a stranger's ----------------------------------------
    Mutant(
        "incoming-local-state",
        "vaultmem/app/sync/incoming.py",
        "if any(p.lower() in LOCAL_DIRS for p in parts):",
        "if False:",
        "a remote's tree never writes .vaultmem/ or .git/ (local state) on this machine",
        (STRANGER + "::test_a_pickled_index_from_the_remote_never_runs", INCOMING),
    ),
    Mutant(
        "incoming-local-state-case",
        "vaultmem/app/sync/incoming.py",
        "if any(p.lower() in LOCAL_DIRS for p in parts):",
        "if any(p in LOCAL_DIRS for p in parts):",
        "local state is refused whatever its case (.VaultMem/ is .vaultmem/ on macOS)",
        (INCOMING,),
    ),
    Mutant(
        "incoming-symlink",
        "vaultmem/app/sync/incoming.py",
        "if change.mode == LINK:",
        "if False:",
        "a remote's tree never creates a symbolic link",
        (STRANGER + "::test_a_symlink_from_the_remote_is_refused", INCOMING),
    ),
    Mutant(
        "incoming-submodule",
        "vaultmem/app/sync/incoming.py",
        "if change.mode == GITLINK:",
        "if False:",
        "a remote's tree never creates a submodule",
        (INCOMING,),
    ),
    Mutant(
        "incoming-merge-rules",
        "vaultmem/app/sync/incoming.py",
        "if new != rule and (base is not None or new is not None):",
        "if False:",
        "a remote cannot change how vaultmem's files merge (.gitattributes)",
        (STRANGER + "::test_a_remote_cannot_change_how_the_logs_merge", INCOMING),
    ),
    Mutant(
        "incoming-subfolder-rules",
        "vaultmem/app/sync/incoming.py",
        'if ".gitattributes" in lower and path != ".gitattributes":',
        "if False:",
        "no .gitattributes below the root says how a file merges (nexus/.gitattributes with "
        "live-context.md merge=binary dropped a signed handoff)",
        (
            STRANGER_CODE
            + "::test_a_merge_rule_in_a_subfolder_is_refused_and_the_handoff_survives",
            INCOMING + "::test_a_merge_rule_below_the_root_is_refused",
        ),
    ),
    Mutant(
        "incoming-git-config",
        "vaultmem/app/sync/incoming.py",
        "if found is not None:",
        "if False:",
        "a remote's tree carries no .gitmodules or .lfsconfig",
        (INCOMING + "::test_git_configuration_a_vault_never_carries_is_refused",),
    ),
    Mutant(
        "incoming-own-gitignore",
        "vaultmem/app/sync/incoming.py",
        'if lower[-1] == ".gitignore" and len(lower) > 1 and lower[0] in OWN_DIRS:',
        "if False:",
        "no .gitignore from a remote keeps new files in vaultmem's folders from syncing",
        (INCOMING + "::test_git_configuration_a_vault_never_carries_is_refused",),
    ),
    Mutant(
        "incoming-root-attribute-lines",
        "vaultmem/app/sync/incoming.py",
        "if risky and _may_match_md(words[0]):",
        "if False:",
        "a new root .gitattributes line cannot change how a .md file merges or is written "
        "(binary, -text, eol, working-tree-encoding)",
        (INCOMING + "::test_a_root_attribute_line_that_can_touch_vaultmem_s_files_is_refused",),
    ),
    Mutant(
        "incoming-attribute-macro",
        "vaultmem/app/sync/incoming.py",
        'if words[0].startswith("[attr]"):',
        "if False:",
        "a remote defines no attribute macro",
        (INCOMING + "::test_a_root_attribute_line_that_can_touch_vaultmem_s_files_is_refused",),
    ),
    Mutant(
        "incoming-vaultmem-package",
        "vaultmem/app/sync/incoming.py",
        'if lower[0] == "vaultmem" and len(parts) > 1:',
        "if False:",
        "a remote writes no vaultmem/ folder at the vault's top level",
        (
            STRANGER_CODE + "::test_a_vaultmem_package_from_the_remote_is_refused_and_never_runs",
            INCOMING + "::test_code_a_python_started_in_the_vault_could_import_is_refused",
        ),
    ),
    Mutant(
        "incoming-top-level-module",
        "vaultmem/app/sync/incoming.py",
        "if len(parts) == 1 and lower[0].endswith(CODE_SUFFIXES):",
        "if False:",
        "a remote writes no module, .pth or extension at the vault's top level",
        (INCOMING + "::test_code_a_python_started_in_the_vault_could_import_is_refused",),
    ),
    Mutant(
        "incoming-top-level-package",
        "vaultmem/app/sync/incoming.py",
        'if lower[0] == "__pycache__" or (len(parts) > 1 and lower[1].startswith("__init__.")):',
        "if False:",
        "a remote writes no package at the vault's top level",
        (INCOMING + "::test_code_a_python_started_in_the_vault_could_import_is_refused",),
    ),
    Mutant(
        "incoming-top-level-executable",
        "vaultmem/app/sync/incoming.py",
        "if len(parts) == 1 and change.mode == EXECUTABLE:",
        "if False:",
        "a remote puts no executable at the vault's top level",
        (INCOMING + "::test_code_a_python_started_in_the_vault_could_import_is_refused",),
    ),
    Mutant(
        "incoming-code-dirs",
        "vaultmem/app/sync/incoming.py",
        'if path.lower().startswith(folder.lower() + "/"):',
        "if False:",
        "a remote writes nothing under a folder this Python imports from inside the vault",
        (INCOMING + "::test_a_folder_this_python_imports_from_inside_the_vault_is_refused",),
    ),
    # --- nothing vaultmem starts resolves code from the vault (core/spawn) ---------------------
    Mutant(
        "spawn-isolated",
        "vaultmem/core/spawn.py",
        'return [os.path.abspath(python), "-I", "-c", boot, module, *args]',
        'return [os.path.abspath(python), "-c", boot, module, *args]',
        "the merge drivers git starts in the vault's root never import the vault's vaultmem/",
        (STRANGER_CODE + "::test_nothing_vaultmem_starts_imports_a_package_in_the_vault", SPAWN),
    ),
    Mutant(
        "spawn-workdir",
        "vaultmem/core/spawn.py",
        "                os.chdir(WORKDIR)",
        "                pass",
        "a detached child starts outside the vault, not in the hook's folder",
        (SPAWN + "::test_a_detached_child_starts_outside_the_vault",),
    ),
    Mutant(
        "spawn-clean-path",
        "vaultmem/core/spawn.py",
        "if p and os.path.isabs(p))",
        "if p)",
        "git and an editor are never found through a relative PATH entry (the vault's own git)",
        (SPAWN + "::test_clean_path_keeps_absolute_entries_only",),
    ),
    Mutant(
        "spawn-extra-outside-vault",
        "vaultmem/core/spawn.py",
        "if norm in wanted and norm not in out and not (vault and _inside(norm, vault)):",
        "if norm in wanted and norm not in out:",
        "a folder isolation drops comes back only when it is outside the vault",
        (SPAWN + "::test_paths_isolation_drops_come_back_absolute_and_never_from_the_vault",),
    ),
    # --- sync: the working tree ---------------------------------------------------------------
    Mutant(
        "move-committed-bytes",
        "vaultmem/app/sync/worktree.py",
        "if _current(_on_disk(root, mv.path)) != mv.old:",
        "if False:",
        "the move to a merge puts off (writes nothing) when a file no longer holds what was "
        "committed: a person's save is never overwritten",
        (WORKTREE,),
    ),
    Mutant(
        "commit-local-state",
        "vaultmem/app/sync/worktree.py",
        "if any(n in LOCAL_NAMES for n in names) or names[-1].startswith(SCRATCH_PREFIXES):",
        "if False:",
        "local state is never committed, even when a .gitignore stops ignoring it",
        (STRANGER + "::test_a_hostile_gitignore_cannot_make_the_victim_push_local_state", WORKTREE),
    ),
    Mutant(
        "commit-links",
        "vaultmem/app/sync/worktree.py",
        'elif new_mode in ("120000", "160000"):',
        "elif False:",
        "a local symbolic link or nested repository is never committed (nor pushed)",
        (STRANGER + "::test_a_local_symlink_is_never_pushed", WORKTREE),
    ),
    # --- the sync barrier every write lock takes ----------------------------------------------
    Mutant(
        "lock-barrier",
        "vaultmem/core/locking.py",
        'if barrier and path.parent.name == "locks" and path.name not in _OUTSIDE_BARRIER:',
        "if False:",
        "every vaultmem write lock holds the sync barrier (shared): no write runs while a sync "
        "commits and moves the working tree",
        ("tests/test_locking.py",),
    ),
    Mutant(
        "lock-barrier-shared",
        "vaultmem/core/locking.py",
        '_wait_for(shared, path.with_name(BARRIER), deadline, timeout, "sync", shared=True)',
        '_wait_for(shared, path.with_name(BARRIER), deadline, timeout, "sync", shared=False)',
        "writers share the barrier: two writes under different locks run at once",
        ("tests/test_locking.py",),
    ),
    # --- the config's kept parse (core/tomlcache.py) ---------------------------------------------
    Mutant(
        "config-cache-bytes",
        "vaultmem/core/tomlcache.py",
        'if not isinstance(found, dict) or found.get("toml") != _fingerprint(data):',
        "if not isinstance(found, dict):",
        "a kept parse of vaultmem.toml is used only for the very bytes it was made from: an edit "
        "or a pull is read as it is",
        ("tests/test_config_cache.py",),
    ),
    Mutant(
        "config-cache-link",
        "vaultmem/core/tomlcache.py",
        "if not stat.S_ISDIR(os.lstat(where.parent).st_mode) or not _json_only(raw):",
        "if not _json_only(raw):",
        "the kept parse is never written through a `.vaultmem` link (outside the vault)",
        ("tests/test_config_cache.py",),
    ),
    Mutant(
        "searcher-reuse-deletions",
        "vaultmem/search/engine.py",
        "if kept is not None and kept.segment().deleted_count() == segment.deleted_count():",
        "if kept is not None:",
        "a kept searcher reuses a segment's reader only while its deletions are unchanged (an "
        "edited note is never found under its old words)",
        ("tests/test_recall.py",),
    ),
    # --- the index manifest's delta: applied only when sealed here and for this base ---------
    Mutant(
        "manifest-delta-seal",
        "vaultmem/search/manifest.py",
        "raw = seal.read(path)  # absent, unsealed or torn: the base alone, as when none was written",
        'raw = __import__("json").loads(path.read_bytes())["data"] if path.exists() else None',
        "a manifest delta this machine did not seal (planted under .vaultmem/) is never applied",
        ("tests/test_manifest_delta.py",),
    ),
    Mutant(
        "manifest-delta-base",
        "vaultmem/search/manifest.py",
        'if not isinstance(raw, dict) or m.base is None or raw.get("base") != m.base.id:',
        "if not isinstance(raw, dict) or m.base is None:",
        "a manifest delta written on another base (left by a crash, or put back) is never applied",
        ("tests/test_manifest_delta.py",),
    ),
    # --- recall's visibility: an agent sees shared documents and its own folder -------------
    Mutant(
        "recall-empty-filter",
        "vaultmem/search/engine.py",
        "if allow is not None and not allow:  # whoosh reads an empty filter as no filter",
        "if False:",
        "a filter that matches no document (an agent with nothing visible) shows nothing, not "
        "every document",
        ("tests/test_recall.py",),
    ),
    # --- the log's escaping: an agent cannot forge another agent's entry ------------------------
    Mutant(
        "entry-escape-header",
        "vaultmem/nexus/entry.py",
        "def escape_body(body: str) -> str:\n",
        "def escape_body(body: str) -> str:\n    return body\n",
        "text that looks like an entry header or metadata inside a body is escaped",
        ("tests/test_log.py", "tests/test_log_properties.py", "tests/test_trust.py"),
    ),
    Mutant(
        "entry-block-id-own",
        "vaultmem/nexus/entry.py",
        "if last >= 0 and body_lines[last].rstrip() == block_line(entry_id):",
        'if last >= 0 and body_lines[last].startswith("^"):',
        "only an entry's own block id line is rendering: any other line is signed text, and "
        "changing it is an edit verify reports",
        ("tests/test_obsidian_links.py",),
    ),
    # --- the FTS5 engine: a database this machine did not write is never opened ----------------
    Mutant(
        "fts5-proven",
        "vaultmem/search/fts5.py",
        "                if not proven(self.vault, manifest):",
        "                if False:",
        "the FTS5 searcher opens a generation only after proving its folder is this machine's",
        ("tests/test_fts5_engine.py",),
    ),
    Mutant(
        "fts5-engine-recorded",
        "vaultmem/search/refresh.py",
        "        and manifest.engine == backends.name(vault)\n",
        "",
        "an index another engine wrote is stale: a switch of [recall] engine rebuilds it",
        ("tests/test_fts5_engine.py",),
    ),
]


def stale(mutants: list[Mutant]) -> list[str]:
    """What is wrong with the mutant list itself, one line each: a `find` that is not exactly
    once in its file (the code moved: point the mutant at where the check lives now), a
    `replace` that changes nothing, a name used twice."""
    problems = []
    names: set[str] = set()
    for m in mutants:
        if m.name in names:
            problems.append(f"{m.name}: the name is used twice")
        names.add(m.name)
        try:
            n = (ROOT / m.path).read_text(encoding="utf-8").count(m.find)
        except OSError as exc:
            problems.append(f"{m.name}: {m.path} cannot be read ({exc})")
            continue
        if n != 1:
            problems.append(f"{m.name}: {m.find!r} occurs {n} times in {m.path}, not once")
        if m.replace == m.find:
            problems.append(f"{m.name}: the replacement is the text it replaces")
    return problems


def run(args: list[str], timeout: float) -> tuple[bool, str]:
    """(passed, the last lines of the output)."""
    try:
        proc = subprocess.run(
            [PY, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, "timed out (counted as killed: the mutant hangs something)"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    failed = next((ln for ln in lines if ln.startswith("FAILED")), lines[-1] if lines else "")
    return proc.returncode == 0, failed


def try_mutant(m: Mutant, *, full: bool, targeted: bool, timeout: float) -> dict[str, str]:
    path = ROOT / m.path
    original = path.read_text(encoding="utf-8")
    if original.count(m.find) != 1:
        return {"name": m.name, "result": "stale", "detail": f"{m.find!r} not once in {m.path}"}
    started = time.monotonic()
    try:
        path.write_text(original.replace(m.find, m.replace), encoding="utf-8")
        stages: list[tuple[str, list[str]]] = []
        if m.tests:
            stages.append(("targeted", list(m.tests)))
        if not targeted:
            stages.append(("quick suite", ["-m", "not slow", "-n", "2"]))
        if full:
            stages.append(("whole suite", ["-n", "2"]))
        for stage, args in stages:
            passed, detail = run(args, timeout)
            if not passed:
                return {
                    "name": m.name,
                    "result": "killed",
                    "stage": stage,
                    "detail": detail,
                    "seconds": f"{time.monotonic() - started:.0f}",
                }
        result = "equivalent" if m.equivalent else "SURVIVED"
        return {
            "name": m.name,
            "result": result,
            "detail": m.equivalent or m.promise,
            "seconds": f"{time.monotonic() - started:.0f}",
        }
    finally:
        path.write_text(original, encoding="utf-8")


def markdown(report: list[dict[str, str]]) -> str:
    """The run as a table: what each mutant breaks, and the test that caught it (or why not)."""
    rows = ["| mutant | file | promise | result | killed by / why equivalent | s |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for r in report:
        detail = r["detail"].removeprefix("FAILED ").split(" - ")[0]
        if r["result"] == "killed":
            detail = f"`{detail}` ({r.get('stage', '')})"
        cells = [f"`{r['name']}`", f"`{r['path']}`", r["promise"], r["result"], detail,
                 r.get("seconds", "-")]  # fmt: skip
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("-k", default="", help="only mutants whose name contains this")
    ap.add_argument("--list", action="store_true", help="list the mutants and whether they apply")
    ap.add_argument("--full", action="store_true", help="try survivors on the whole suite too")
    ap.add_argument(
        "--targeted", action="store_true", help="only the targeted tests (a quick first pass)"
    )
    ap.add_argument("--timeout", type=float, default=900, help="seconds per test run")
    ap.add_argument("--markdown", type=Path, help="also write the results as a markdown table")
    opts = ap.parse_args()
    chosen = [m for m in MUTANTS if opts.k in m.name]
    if opts.list:
        for m in chosen:
            text = (ROOT / m.path).read_text(encoding="utf-8")
            state = "applies" if text.count(m.find) == 1 else "STALE"
            print(f"{m.name:28} {state:8} {m.path}: {m.promise}")
        return 0
    problems = stale(chosen)
    if problems:  # before anything runs: a stale mutant would only be skipped, late
        print(f"{len(problems)} stale mutant(s); nothing was run:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 2
    report = []
    for m in chosen:
        row = try_mutant(m, full=opts.full, targeted=opts.targeted, timeout=opts.timeout)
        report.append({**row, "promise": m.promise, "path": m.path})
        print(f"{row['name']:28} {row['result']:10} {row.get('seconds', '-'):>5}s  {row['detail']}")
        sys.stdout.flush()
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutants.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for row in report:
        counts[row["result"]] = counts.get(row["result"], 0) + 1
    print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if opts.markdown:
        opts.markdown.write_text(markdown(report), encoding="utf-8")
    return 1 if counts.get("SURVIVED") or counts.get("stale") else 0


if __name__ == "__main__":
    sys.exit(main())
