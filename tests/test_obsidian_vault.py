"""The vault read the way Obsidian reads it (issue 25, "In Obsidian"): after a working session
(several agents append, reply, hand over, pipe a diff; a fact is remembered, one retained and
promoted; a decision, a checkpoint, digests, a log rotation that makes an archive, a profile)
every wikilink in every markdown file resolves as Obsidian resolves it.

The resolver lives here, not in the product: a link target is a file name without `.md`
anywhere in the vault (or a path ending in it), or a frontmatter alias; `#Heading` must be a
heading of the target, `#^block` a block id in it (a line ending in ` ^id`, or `^id` alone).
Links inside code (fences, inline code) and HTML comments are not links; `\\[[` is text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.core import notes
from vaultmem.core.vault import Vault
from vaultmem.nexus import log

NOW = "2026-12-09T12:00:00Z"  # weeks 47 to 49 are over; the entries of 1-9 December stay live

DIFF = """diff --git a/app/pay.py b/app/pay.py
--- a/app/pay.py
+++ b/app/pay.py
@@ -1,3 +1,3 @@
-def total(x): return x * 1.0
+def total(x: int) -> int:
+    return x  # cents, see ``` in docs
"""

# --- the resolver -------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"(?<!\\)!?\[\[([^\[\]]+?)\]\]")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")
_BLOCK = re.compile(r"(?:^|\s)\^([A-Za-z0-9-]+)[ \t]*$")


@dataclass(frozen=True)
class Page:
    path: str  # vault-relative
    text: str
    headings: frozenset[str]
    blocks: frozenset[str]
    aliases: tuple[str, ...]


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _lines_outside_code(text: str) -> list[str]:
    out = []
    fence = ""
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        out.append(line)
    return out


def read_page(root: Path, path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    note = notes.parse(text)
    raw_aliases = note.meta.get("aliases") or []
    aliases = tuple(
        str(a) for a in (raw_aliases if isinstance(raw_aliases, list) else [raw_aliases])
    )
    body = note.body if note.has_frontmatter else text
    lines = _lines_outside_code(_COMMENT.sub("", body))
    headings = frozenset(_norm(m.group(1)) for ln in lines if (m := _HEADING.match(ln)))
    blocks = frozenset(m.group(1) for ln in lines if (m := _BLOCK.search(ln)))
    return Page(path.relative_to(root).as_posix(), text, headings, blocks, aliases)


def links_of(page: Page) -> list[str]:
    """Every wikilink Obsidian sees: in the body (not in code or comments) and in frontmatter
    property values."""
    note = notes.parse(page.text)
    found = []
    if note.has_frontmatter:
        fm = page.text[: len(page.text) - len(note.body)]
        found += _LINK.findall(fm)
    for line in _lines_outside_code(
        _COMMENT.sub("", note.body if note.has_frontmatter else page.text)
    ):
        found += _LINK.findall(_CODE_SPAN.sub("", line))
    return found


class Vaultview:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pages = {
            p.relative_to(root).as_posix(): read_page(root, p)
            for p in sorted(root.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(root).parts)
        }

    def resolve(self, target: str, source: str) -> Page | None:
        if not target:
            return self.pages[source]
        want = target.removesuffix(".md").casefold()
        for rel, page in self.pages.items():
            stem = rel.removesuffix(".md").casefold()
            if stem == want or stem.endswith("/" + want):
                return page
        for page in self.pages.values():
            if any(_norm(a) == _norm(target) for a in page.aliases):
                return page
        return None

    def broken(self) -> list[str]:
        out = []
        for rel, page in self.pages.items():
            for link in links_of(page):
                inner = link.split("|", 1)[0]
                target, _, sub = inner.partition("#")
                found = self.resolve(target.strip(), rel)
                if found is None:
                    out.append(f"{rel}: [[{link}]]: no note {target!r}")
                    continue
                last = sub.split("#")[-1] if sub else ""
                if last.startswith("^"):
                    if last[1:] not in found.blocks:
                        out.append(f"{rel}: [[{link}]]: no block {last} in {found.path}")
                elif last and _norm(last) not in found.headings:
                    out.append(f"{rel}: [[{link}]]: no heading {last!r} in {found.path}")
        return out


def test_the_resolver_tells_a_broken_link_from_a_good_one(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "Note.md").write_text(
        "---\naliases:\n  - Other name\n---\n# Top\n\npara ^p-1\n\n```\n[[nowhere]]\n```\n"
        "`[[nowhere]]` <!-- [[nowhere]] --> \\[[nowhere]]\n"
    )
    (tmp_path / "b.md").write_text(
        "[[Note]] [[a/Note#Top]] [[note#^p-1|x]] [[Other name]] [[#Here]] ![[Note]]\n\n## Here\n"
        "[[gone]] [[Note#Bottom]] [[Note#^p-2]]\n"
    )
    assert Vaultview(tmp_path).broken() == [
        "b.md: [[gone]]: no note 'gone'",
        "b.md: [[Note#Bottom]]: no heading 'Bottom' in a/Note.md",
        "b.md: [[Note#^p-2]]: no block ^p-2 in a/Note.md",
    ]


# --- the session --------------------------------------------------------------------------------


def ok(*args: str, stdin: str = "") -> str:
    res = run_cli(*args, stdin=stdin)
    assert res.exit_code == 0, (args, res.stderr)
    return res.stdout.strip()


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    root = tmp_path / "orbit"
    ok("init", str(root), "--agent", "ella", "--agent", "lyra", "--reviewer", "chiara")
    (root / "vaultmem.toml").write_text(
        (root / "vaultmem.toml").read_text() + '\n[recall]\nmode = "keyword"\n'
    )
    monkeypatch.setenv("VAULTMEM_VAULT", str(root))
    v = Vault.open(root)

    def at(day: int, hour: int) -> str:
        return f"2026-11-{day:02d}T{hour:02d}:00:00.000Z"

    a = log.append
    a(v, "ella", "Webhook retries are idempotent", channel="backend", type_="fix", time=at(16, 9))
    h = a(
        v, "ella", "Checkout must send Idempotency-Key", channel="api", type_="handoff",
        to=["lyra"], body="POST /v2/checkout rejects requests without it.", time=at(17, 9),
    ).entry  # fmt: skip
    a(v, "lyra", "On it", channel="api", type_="ack", acks=[h.id], time=at(17, 10))
    q = a(v, "lyra", "Do refunds keep the fee?", channel="payments", type_="question",
          time=at(24, 9)).entry  # fmt: skip
    a(v, "ella", "Yes, the fee stays", channel="payments", type_="answer", acks=[q.id],
      time=at(25, 9))  # fmt: skip
    a(v, "lyra", "Week 49 begins", channel="frontend", time=at(30, 9))
    a(v, "ella", "Slots show in local time", channel="frontend", time="2026-12-02T09:00:00.000Z")
    # the day's work, through the CLI
    ok("append", "Totals are integers", "--channel", "backend", "--type", "fix", "--body", "-",
       "--agent", "ella", stdin=DIFF)  # fmt: skip
    ok("append", "Refunds reviewed", "--agent", "lyra", "--type", "note", "--ack", q.id)
    ok("remember", "Chiara reviews pull requests on Tuesdays and Fridays.", "--name",
       "Chiara's review days", "--description", "PR reviews Tue and Fri", "--type", "user")  # fmt: skip
    out = ok("retain", "Prices are shown with VAT", "--type", "project", "--agent", "ella",
             "--json")  # fmt: skip
    bank_id = re.search(r'"(b-[0-9a-f]{8})"', out)
    assert bank_id, out
    ok("promote", "approve", bank_id.group(1), "--reviewer", "chiara", "--scope", "shared")
    ok("decide", "Prices are stored in integer cents", "--why", "No float rounding", "--agent",
       "ella")  # fmt: skip
    ok("checkpoint", "Refunds next; totals done", "--agent", "ella")
    ok("digest", "--agent", "ella", "--offline")
    ok("log", "rotate", "--keep-days", "10")
    ok("profile", "--agent", "ella")
    # a person's note, linking the way people link in Obsidian
    (root / "wiki").mkdir(exist_ok=True)
    (root / "wiki" / "Team.md").write_text(
        "# Team\n\nSee [[Chiara's review days]], the handoff [[live-context-2026-11#^ella-2]], "
        "the fix [[live-context#^ella-5|with the diff]] and [[decisions#^ella-d1]].\n"
    )
    return root


def test_every_wikilink_in_a_session_vault_resolves(session: Path) -> None:
    view = Vaultview(session)
    archive = "nexus/archive/live-context-2026-11.md"
    assert archive in view.pages and "nexus/digests/2026-W47.md" in view.pages
    assert {"memory/PROFILE.md", "agents/ella/checkpoint.md"} <= set(view.pages)
    assert view.broken() == []
    # what the links were checked on: there are links to entries, decisions and facts
    every = [link for page in view.pages.values() for link in links_of(page)]
    assert any(link.startswith(f"{archive[:-3]}#^ella-2") for link in every)
    assert any("nexus/decisions#^ella-d1" in link for link in every)
    # the diff piped into `append --body -` is a fenced block, not a list of lines
    live = (session / "nexus" / "live-context.md").read_text()
    assert "\n````diff\ndiff --git a/app/pay.py" in live  # longer than the ``` inside
    # and nothing of it broke the log
    res = run_cli("verify")
    assert res.exit_code == 0, res.stdout + res.stderr
