"""Credential scanner for text agents write into the vault (log entries, decisions, facts).

`scan(text)` finds credentials; `apply_policy(text, policy)` replaces each one with a visible
`[redacted:<kind>]` marker (policy "redact", the default) or refuses the write (policy "refuse",
`SecretRefusedError`, exit 8). A Finding never carries the secret itself, only its kind, where it
was and a masked preview: findings end up in warnings and JSON, and keys must not leak that way.

The patterns aim at what agents actually paste: provider API keys, cloud keys, tokens, private-key
blocks and `password=`-style assignments. They prefer a false positive on a key-shaped string over
a leaked credential; prose ("the password is set in the vault") is left alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from vaultmem.core.errors import ConfigError, SecretRefusedError
from vaultmem.core.records import record

POLICIES = ("redact", "refuse")

__all__ = [
    "Finding",
    "SecretRefusedError",
    "apply_policy",
    "describe",
    "notices",
    "redact",
    "redact_outbound",
    "scan",
    "scrub",
]


@record
class Finding:
    kind: str  # "anthropic-key", "aws-access-key", "github-token", "private-key", "password", ...
    start: int  # character offsets of the secret in the scanned text
    end: int
    line: int  # 1-based line of the start
    preview: str  # masked: the first characters and the length, never the whole secret

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "line": self.line, "preview": self.preview}


# The engine is RE2 (google-re2): it matches with automata, never backtracks, and so runs in
# time linear in the text for every pattern, the ones here and any added later. Python's `re`
# backtracks: `finditer` with a pattern that opens on an unbounded class is quadratic even with
# no nested quantifier (`'_' * 10_000 + ' token'` took 15 s). RE2 has no lookaround, and its
# submatches cost ~30 µs a match (an NFA pass over the match); so every pattern is matched
# without groups, and where only part of a match is the secret (written `(?P<v>...)` in the
# source, for reading and for the test that checks the two agree) a `Value` function finds it
# in the match with `find`/`strip` (C speed) and makes the checks a lookaround would have.
# RE2's `\b`, `\d`, `\s` are ASCII: a key next to a non-ASCII letter is still found.
#
# Order matters: the first pattern that claims a span wins (anthropic before the generic `sk-`).
# Each pattern has trigger substrings (looked up in the lowercased text): a pattern is compiled
# and run only when one is present, so the common case (no credential) costs a few `in` tests
# and no engine at all.
# Several formats follow detect-secrets' plugins (github.com/Yelp/detect-secrets), which we do
# not depend on: importing it costs ~120 ms, and `append` runs on every agent turn.

# (the UTF-8 text, match start, match end) -> the secret's (start, end), or None: not a secret
Value = Callable[[bytes, int, int], "tuple[int, int] | None"]
_SPACE = b" \t\n\r\f\v"
_B64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_TOKEN = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/-"


def _after(seps: bytes, skip: bytes) -> Value:
    """The secret follows the first of `seps` after the match's first character (which may be
    a separator standing before the key name), and the `skip` characters after it."""

    def value(data: bytes, start: int, end: int) -> tuple[int, int] | None:
        found = [i for i in (data.find(bytes([c]), start + 1, end) for c in seps) if i >= 0]
        if not found:
            return None
        at = min(found) + 1
        return at + len(data[at:end]) - len(data[at:end].lstrip(skip)), end

    return value


def _last(count: int) -> Value:
    return lambda _data, _start, end: (end - count, end)


def _token_suffix(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    """`... bearer TOKEN==`: the run of token characters (and trailing `=`) ending the match."""
    body = data[start:end].rstrip(b"=")
    return start + len(body.rstrip(_TOKEN)), end


def _bearer(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    # a bearer token in prose is long and has a digit ("Bearer tokens" is not one)
    at, end = _token_suffix(data, start, end) or (end, end)
    return (at, end) if any(48 <= c <= 57 for c in data[at:end]) else None


def _bare_aws(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    # a run of exactly 40, with both cases, a digit and a / or +: a hex digest or a word never
    # has all of them
    value, after = data[end - 40 : end], data[end : end + 1]
    if after and after in _B64_BYTES + b"=":
        return None
    has = {kind: False for kind in "lud/"}
    for c in value:
        has["l" if 97 <= c <= 122 else "u" if 65 <= c <= 90 else "d" if 48 <= c <= 57 else "/"] = (
            True
        )
    return (end - 40, end) if all(has.values()) else None


def _mysql(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    at = max(data.rfind(bytes([c]), start, end) for c in _SPACE) + 1
    return at + (11 if data.startswith(b"--password=", at) else 2), end


def _url_password(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    at = data.find(b":", data.find(b"://", start, end) + 3, end) + 1
    return at, data.find(b"@", at, end)


_B64 = r"[A-Za-z0-9+/]"
_KEY_END = r"PRIVATE[ \t\r\n]+KEY(?:[ \t\r\n]+BLOCK)?-----"
_SPECS: tuple[tuple[str, tuple[str, ...], str] | tuple[str, tuple[str, ...], str, Value], ...] = (
    (
        "private-key",
        ("private", "begin"),
        # the BEGIN line even when split over lines or spaced oddly; to its END line or the end
        rf"(?s)-----BEGIN[ \t\r\n]+(?:[A-Z0-9]+[ \t\r\n]+)*{_KEY_END}"
        rf"(?:.*?-----END[ \t\r\n]+(?:[A-Z0-9]+[ \t\r\n]+)*{_KEY_END}|.*\z)",
    ),
    (
        "private-key",
        ("putty-user-key-file",),
        r"(?s)PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\z)",
    ),
    (
        # a key body pasted without its header: DER (MII...) or OpenSSH (b3BlbnNzaC1rZXktdjE)
        # base64 over at least two full 64-character lines
        "private-key",
        ("mii", "b3blbnnzac1rzxktdje"),
        rf"(?:MII|b3BlbnNzaC1rZXktdjE){_B64}{{40,}}(?:\r?\n{_B64}{{40,}}=*)+",
    ),
    ("anthropic-key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("stripe-key", ("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    (
        "aws-access-key",
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
    ),
    ("gitlab-token", ("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("google-api-key", ("aiza",), r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("slack-token", ("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        r"https?://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/\-]{20,}",
    ),
    (
        "discord-webhook",
        ("discord",),
        r"https?://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}",
    ),
    ("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("npm-token", ("_authtoken",), r"_authToken\s*=\s*(?P<v>[^\s\"']{8,})", _after(b"=", _SPACE)),
    ("sendgrid-key", ("sg.",), r"\bSG\.[A-Za-z0-9_\-]{20,24}\.[A-Za-z0-9_\-]{39,50}"),
    ("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    (
        "azure-key",
        ("accountkey", "sharedaccesskey"),
        r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*(?P<v>[A-Za-z0-9+/]{20,}={0,2})",
        _after(b"=", _SPACE),
    ),
    (
        "azure-sas",
        ("sig=",),
        r"[?&]sig=(?P<v>[A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})",
        _after(b"=", b""),
    ),
    (
        "auth-header",
        ("authorization", "x-api-key", "api-key", "x-auth-token"),
        r"(?i)(?:\bauthorization\s*[:=]\s*[\"']?(?:bearer|basic|token|bot)\s+"
        r"|\b(?:x-api-key|api-key|x-auth-token)\s*[:=]\s*[\"']?)(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)",
        _token_suffix,
    ),
    # a bearer token in prose or a curl line: long, and with a digit (`_bearer`)
    ("auth-header", ("bearer",), r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/\-]{16,}=*)", _bearer),
    (
        "aws-secret-key",
        ("secret",),
        r"(?i)\b(?:aws_?)?secret_?(?:access_?)?key(?:_?id)?\b[\"']?\s*[:=]\s*[\"']?"
        r"(?P<v>[A-Za-z0-9/+=]{40})\b",
        _last(40),
    ),
    # a bare AWS secret access key: a run of exactly 40 base64 characters with both cases, a
    # digit and a / or + (a hex digest or a word never has all of them)
    ("aws-secret-key", ("/", "+"), r"(?:^|[^A-Za-z0-9/+=])(?P<v>[A-Za-z0-9/+]{40})", _bare_aws),
    (
        "password",
        ("mysql", "mariadb"),
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s(?:-p|--password=)(?P<v>[^\s\"']{3,})",
        _mysql,
    ),
    (
        "password",
        ("pass", "pwd", "secret", "key", "token"),
        r"(?i)(?:^|[^A-Za-z0-9])(?:[a-z0-9]*password|[a-z0-9]*passwd|passphrase|[a-z0-9_\-]*_pass"
        r"|[a-z0-9_\-]*_?pwd|(?:[a-z0-9_\-]*_)?(?:secret|secret_?key|api_?key|apikey|access_?key"
        r"|access_?token|auth_?token|token|client_?secret|private_?key))\b[\"']?"
        r"[ \t]*[=:][ \t]*"
        r"(?P<v>\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;)\]}]{4,})",
        _after(b"=:", b" \t"),
    ),
    (
        "url-credentials",
        ("://",),
        r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:(?P<v>[^\s@/]{3,})@[^\s/]+",
        _url_password,
    ),
)

# invisible characters that can hide a key from a pattern (a zero-width space inside a token)
_INVISIBLE_CHARS = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE = frozenset(map(ord, _INVISIBLE_CHARS))


@functools.cache
def _compiled(index: int) -> Any:
    import re2  # linear-time matching; imported only when a trigger is present

    # without groups (see `Value`), over UTF-8 bytes (`.` and classes still take whole
    # characters): the str face of the binding rebuilds offsets for every match
    return re2.compile(_SPECS[index][2].replace("(?P<v>", "(?:").encode())


# values of `password=` that are clearly not secrets: placeholders, references, redactions
_PLACEHOLDER_STARTS = (
    b"[", b"$", b"<", b"%(", b"{{", b"...", "…".encode(), b"os.environ", b"getenv", b"env(",
    b"process.env",
)  # fmt: skip
_PLACEHOLDER_WORDS = frozenset(
    b"none null true false required changeme redacted secret password".split()
)


def _placeholder(raw: bytes) -> bool:
    value = raw.lower()
    if value[:1] in (b'"', b"'"):
        value = value[1:]
    if value.startswith(_PLACEHOLDER_STARTS):
        return True
    if value[-1:] in (b'"', b"'"):
        value = value[:-1]
    return value in _PLACEHOLDER_WORDS or (
        value != b"" and b"" in (value.strip(b"*"), value.strip(b"x"))
    )


def _mask(secret: str) -> str:
    shown = secret[:4] if len(secret) > 12 else secret[:2]
    return f"{shown}… ({len(secret)} chars)"


class _Origin:
    """Positions in the text without invisible characters, back to positions in the original.

    Asked in increasing order, it walks the original text once, counting what was removed with
    `str.count` (C speed): linear in the text however many positions are asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.orig = 0  # a position in the original text ...
        self.clean = 0  # ... and the same character's position in the clean text

    def __call__(self, clean: int) -> int:
        if clean < self.clean:  # not in increasing order: start again (never in scan)
            self.orig = self.clean = 0
        while self.clean < clean:
            step = clean - self.clean
            segment = self.text[self.orig : self.orig + step]
            removed = sum(segment.count(c) for c in _INVISIBLE_CHARS)
            self.orig += step
            self.clean += step - removed
        # skip invisible characters standing at this position
        while self.orig < len(self.text) and ord(self.text[self.orig]) in _INVISIBLE:
            self.orig += 1
        return self.orig


# Above this length the trigger substrings are looked up in one RE2 pass, not one `in` each
# (CPython's substring search is not linear on every input: `'_' * N` slows `in "_live_"`).
_MANY = 4096


@functools.cache
def _trigger_set() -> tuple[Any, tuple[tuple[int, ...], ...]]:
    """One RE2 set of every trigger, and for each of them the specs it enables."""
    import re2

    words = sorted({t for spec in _SPECS for t in spec[1]})
    found = re2.Set.SearchSet()
    for word in words:
        found.Add(re2.escape(word))
    found.Compile()
    enables = tuple(tuple(i for i, spec in enumerate(_SPECS) if w in spec[1]) for w in words)
    return found, enables


def _triggered(lower: str) -> list[int]:
    """The specs whose trigger substrings occur in the (lowercased) text, in spec order."""
    if len(lower) <= _MANY:
        return [i for i, spec in enumerate(_SPECS) if any(t in lower for t in spec[1])]
    found, enables = _trigger_set()
    return sorted({i for w in found.Match(lower) or () for i in enables[w]})


def _without_invisible(text: str) -> str:
    # one `replace` per character (C, linear); `translate` looks each character up in a dict
    for char in _INVISIBLE_CHARS:
        if char in text:
            text = text.replace(char, "")
    return text


class _Chars:
    """Byte offsets in the UTF-8 text, asked in increasing order, as character offsets."""

    def __init__(self, data: bytes, ascii_only: bool) -> None:
        self.data, self.ascii_only = data, ascii_only
        self.byte = self.char = 0

    def __call__(self, byte: int) -> int:
        if self.ascii_only:
            return byte
        if byte < self.byte:
            self.byte = self.char = 0
        self.char += len(self.data[self.byte : byte].decode("utf-8"))
        self.byte = byte
        return self.char


def scan(text: str) -> list[Finding]:
    """Every credential found in `text`, in order of position, without overlaps.

    Invisible characters (zero-width spaces, soft hyphens) are ignored while matching, so a key
    split by one is still found; the finding covers the original characters. Linear in the
    length of `text` (RE2, and every step around it); callers cap the length before they scan.
    """
    clean = _without_invisible(text)
    triggered = _triggered(clean.lower())
    if not triggered:
        return []
    data = clean.encode("utf-8")
    taken: list[tuple[int, int, str]] = []  # (start, end, kind) in bytes of `data`, sorted
    for index in triggered:
        spec = _SPECS[index]
        kind = spec[0]
        find_value = spec[3] if len(spec) == 4 else None
        new: list[tuple[int, int, str]] = []
        pattern, pos, j = _compiled(index), 0, 0
        while (match := pattern.search(data, pos)) is not None:
            start, end = match.span()
            pos = max(end, start + 1)
            if find_value is not None:
                span = find_value(data, start, end)
                if span is None:
                    continue
                start, end = span
            while j < len(taken) and taken[j][1] <= start:
                j += 1
            if j < len(taken) and taken[j][0] < end:
                if find_value is None:
                    # an earlier pattern claimed part of this match, and would claim part of
                    # every match that starts before the claim ends: go on from there
                    pos = max(pos, taken[j][1])
                continue
            if kind == "password" and _placeholder(data[start:end]):
                continue
            new.append((start, end, kind))
        if new:  # two sorted runs: timsort merges them in linear time
            taken = sorted(taken + new)
    found: list[Finding] = []
    chars = _Chars(data, len(data) == len(clean))
    origin = _Origin(text) if len(clean) != len(text) else None
    line, counted = 1, 0
    for bstart, bend, kind in taken:
        start, end = chars(bstart), chars(bend)
        value = clean[start:end]
        if origin is not None:  # back to positions in the original text
            start, end = origin(start), origin(end - 1) + 1
        line += text.count("\n", counted, start)
        counted = start
        found.append(Finding(kind, start, end, line, _mask(value)))
    return found


def redact(text: str, findings: list[Finding]) -> str:
    """Replace each finding with a visible `[redacted:<kind>]` marker."""
    out: list[str] = []
    pos = 0
    for f in sorted(findings, key=lambda f: f.start):
        out.append(text[pos : f.start])
        out.append(f"[redacted:{f.kind}]")
        pos = f.end
    out.append(text[pos:])
    return "".join(out)


def describe(findings: list[Finding]) -> str:
    """`aws-access-key (line 1), password (line 3)`: for warnings and errors."""
    return ", ".join(f"{f.kind} (line {f.line})" for f in findings)


def notices(findings: list[Finding] | tuple[Finding, ...]) -> list[str]:
    """The one wording of "a secret was redacted", for stderr (CLI) and `warnings` (MCP)."""
    return [
        f"redacted a credential ({f.kind}, line {f.line}) before writing: {f.preview}"
        for f in findings
    ]


def scrub(
    policy: str,
    texts: dict[str, str],
    *,
    identifiers: dict[str, str] | None = None,
    what: str = "text",
) -> tuple[dict[str, str], list[Finding]]:
    """The one secret policy: every field of one write, scanned before anything is written.

    `texts` are redacted (policy "redact") or refused (policy "refuse", exit 8) all together:
    under "refuse" one secret in any field stops the whole write. `identifiers` (a channel, a
    tag, a section name, a fact's name, a key) cannot carry a `[redacted:...]` marker: a secret
    there is refused under every policy. Returns the cleaned texts and every finding.
    """
    check_policy(policy)
    for field, value in (identifiers or {}).items():
        found = scan(value)
        if found:
            raise SecretRefusedError(
                f"the {field} contains what looks like a credential: {describe(found)}; "
                "nothing was written",
                f"a {field} is a name, not a place for a secret: pick another one",
            )
    cleaned: dict[str, str] = {}
    findings: list[Finding] = []
    refused: list[str] = []
    for field, value in texts.items():
        found = scan(value)
        findings += found
        if found:
            refused.append(f"{field}: {describe(found)}" if len(texts) > 1 else describe(found))
        cleaned[field] = redact(value, found) if found else value
    if refused and policy == "refuse":
        raise SecretRefusedError(
            f"the {what} contains what looks like a credential ({'; '.join(refused)}); "
            "nothing was written",
            "remove the secret (store it in a secret manager and refer to it by name); "
            'or set [secrets] policy = "redact" to write it with the secret redacted',
        )
    return cleaned, findings


def redact_outbound(text: str) -> tuple[str, list[Finding]]:
    """Text about to leave the machine (a prompt to an LLM): every secret is redacted,
    whatever the vault's policy. "refuse" protects the vault's files; nothing that looks like a
    credential is ever sent, so there is nothing to refuse here."""
    findings = scan(text)
    return (redact(text, findings) if findings else text), findings


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ConfigError(
            f"unknown [secrets] policy {policy!r}",
            f'set policy = "redact" or "refuse" in vaultmem.toml (known: {", ".join(POLICIES)})',
        )
    return policy


def apply_policy(
    text: str,
    policy: str,
    *,
    what: str = "text",
    identifiers: dict[str, str] | None = None,
) -> tuple[str, list[Finding]]:
    """`scrub` for one text: (the text with every secret redacted, findings), or refused.

    The caller warns about the findings (stderr) when the text was redacted.
    """
    cleaned, findings = scrub(policy, {what: text}, identifiers=identifiers, what=what)
    return cleaned[what], findings
