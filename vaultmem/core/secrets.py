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
import re
from dataclasses import dataclass
from typing import Any

from vaultmem.core.errors import ConfigError, SecretRefusedError

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


@dataclass(frozen=True)
class Finding:
    kind: str  # "anthropic-key", "aws-access-key", "github-token", "private-key", "password", ...
    start: int  # character offsets of the secret in the scanned text
    end: int
    line: int  # 1-based line of the start
    preview: str  # masked: the first characters and the length, never the whole secret

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "line": self.line, "preview": self.preview}


# Order matters: the first pattern that claims a span wins (anthropic before the generic `sk-`).
# Group "v", when present, is the secret; otherwise the whole match is. Each pattern has trigger
# substrings (looked up in the lowercased text): a pattern is compiled and run only when one is
# present, so the common case (no credential) costs a few `in` tests, not 30 regex compiles.
# Several formats follow detect-secrets' plugins (github.com/Yelp/detect-secrets), which we do
# not depend on: importing it costs ~120 ms, and `append` runs on every agent turn.
_B64 = r"[A-Za-z0-9+/]"
_SPECS: tuple[tuple[str, tuple[str, ...], str, int], ...] = (
    (
        "private-key",
        ("private", "begin"),
        # the BEGIN line even when split over lines or spaced oddly; to its END line or the end
        r"-----BEGIN[ \t\r\n]+(?:[A-Z0-9]+[ \t\r\n]+)*PRIVATE[ \t\r\n]+KEY(?:[ \t\r\n]+BLOCK)?-----"
        r"(?:.*?-----END[ \t\r\n]+(?:[A-Z0-9]+[ \t\r\n]+)*PRIVATE[ \t\r\n]+KEY(?:[ \t\r\n]+BLOCK)?"
        r"-----|.*\Z)",
        re.DOTALL,
    ),
    (
        "private-key",
        ("putty-user-key-file",),
        r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)",
        re.DOTALL,
    ),
    (
        # a key body pasted without its header: DER (MII...) or OpenSSH (b3BlbnNzaC1rZXktdjE)
        # base64 over at least two full 64-character lines
        "private-key",
        ("mii", "b3blbnnzac1rzxktdje"),
        rf"(?:MII|b3BlbnNzaC1rZXktdjE){_B64}{{40,}}(?:\r?\n{_B64}{{40,}}=*)+",
        0,
    ),
    ("anthropic-key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
    ("openai-key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
    ("stripe-key", ("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", 0),
    (
        "aws-access-key",
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
        0,
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
        0,
    ),
    ("gitlab-token", ("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}", 0),
    ("google-api-key", ("aiza",), r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    ("slack-token", ("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        r"https?://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/\-]{20,}",
        0,
    ),
    (
        "discord-webhook",
        ("discord",),
        r"https?://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}",
        0,
    ),
    ("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}", 0),
    ("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("npm-token", ("_authtoken",), r"_authToken\s*=\s*(?P<v>[^\s\"']{8,})", 0),
    ("sendgrid-key", ("sg.",), r"\bSG\.[A-Za-z0-9_\-]{20,24}\.[A-Za-z0-9_\-]{39,50}", 0),
    (
        "jwt",
        ("eyj",),
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        0,
    ),
    (
        "azure-key",
        ("accountkey", "sharedaccesskey"),
        r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*(?P<v>[A-Za-z0-9+/]{20,}={0,2})",
        0,
    ),
    ("azure-sas", ("sig=",), r"[?&]sig=(?P<v>[A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})", 0),
    (
        "auth-header",
        ("authorization", "x-api-key", "api-key", "x-auth-token"),
        r"(?i)(?:\bauthorization\s*[:=]\s*[\"']?(?:bearer|basic|token|bot)\s+"
        r"|\b(?:x-api-key|api-key|x-auth-token)\s*[:=]\s*[\"']?)(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)",
        0,
    ),
    (
        # a bearer token in prose or a curl line: long, and with a digit ("Bearer tokens" is not)
        "auth-header",
        ("bearer",),
        r"(?i)\bbearer\s+(?P<v>(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{16,}=*)",
        0,
    ),
    (
        "aws-secret-key",
        ("secret",),
        r"(?i)\b(?:aws_?)?secret_?(?:access_?)?key(?:_?id)?\b[\"']?\s*[:=]\s*[\"']?"
        r"(?P<v>[A-Za-z0-9/+=]{40})\b",
        0,
    ),
    (
        # a bare AWS secret access key: 40 base64 characters with both cases, a digit and
        # a / or + (a hex digest or a word never has all of them)
        "aws-secret-key",
        ("/", "+"),
        r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[/+])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
        r"(?=[A-Za-z0-9/+]*[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        0,
    ),
    (
        "password",
        ("mysql", "mariadb"),
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s(?:-p|--password=)(?P<v>[^\s\"']{3,})",
        0,
    ),
    (
        "password",
        ("pass", "pwd", "secret", "key", "token"),
        r"(?i)(?<![A-Za-z0-9])(?:[a-z0-9]*password|[a-z0-9]*passwd|passphrase|[a-z0-9_\-]*_pass"
        r"|[a-z0-9_\-]*_?pwd|(?:[a-z0-9_\-]*_)?(?:secret|secret_?key|api_?key|apikey|access_?key"
        r"|access_?token|auth_?token|token|client_?secret|private_?key))\b[\"']?"
        r"[ \t]*(?:=|:(?=[ \t]*[\"'\S]))[ \t]*"
        r"(?P<v>\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;)\]}]{4,})",
        0,
    ),
    (
        "url-credentials",
        ("://",),
        r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:(?P<v>[^\s@/]{3,})@[^\s/]+",
        re.IGNORECASE,
    ),
)

# invisible characters that can hide a key from a pattern (a zero-width space inside a token)
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


@functools.cache
def _compiled(index: int) -> re.Pattern[str]:
    _kind, _triggers, source, flags = _SPECS[index]
    return re.compile(source, flags)


# values of `password=` that are clearly not secrets: placeholders, references, redactions
_PLACEHOLDER = r"""^["']?(?:\[redacted[:\]]|\$\{?|<|%\(|\{\{|\*+["']?$|x+["']?$|\.\.\.|…|os\.environ
    |getenv|env\(|process\.env|none["']?$|null["']?$|true["']?$|false["']?$|required["']?$
    |changeme["']?$|redacted["']?$|secret["']?$|password["']?$)"""


@functools.cache
def _placeholder() -> re.Pattern[str]:
    return re.compile(_PLACEHOLDER, re.IGNORECASE | re.VERBOSE)


def _mask(secret: str) -> str:
    shown = secret[:4] if len(secret) > 12 else secret[:2]
    return f"{shown}… ({len(secret)} chars)"


def _visible(text: str) -> tuple[str, list[int] | None]:
    """The text without invisible characters, and where each kept character was (None when
    nothing was removed)."""
    clean = text.translate(_INVISIBLE)
    if len(clean) == len(text):
        return text, None
    where = [i for i, c in enumerate(text) if ord(c) not in _INVISIBLE]
    return clean, where


def scan(text: str) -> list[Finding]:
    """Every credential found in `text`, in order of position, without overlaps.

    Invisible characters (zero-width spaces, soft hyphens) are ignored while matching, so a key
    split by one is still found; the finding covers the original characters.
    """
    clean, where = _visible(text)
    taken: list[tuple[int, int]] = []
    found: list[Finding] = []
    lower = clean.lower()
    for index, (kind, triggers, _source, _flags) in enumerate(_SPECS):
        if not any(t in lower for t in triggers):
            continue
        pattern = _compiled(index)
        for match in pattern.finditer(clean):
            if "v" in pattern.groupindex and match.group("v") is not None:
                start, end = match.span("v")
            else:
                start, end = match.span()
            value = clean[start:end]
            if kind == "password" and (_placeholder().match(value) or value.startswith("[")):
                continue
            if any(start < b and a < end for a, b in taken):
                continue
            taken.append((start, end))
            if where is not None:  # back to positions in the original text
                start, end = where[start], where[end - 1] + 1
            line = text.count("\n", 0, start) + 1
            found.append(Finding(kind, start, end, line, _mask(value)))
    found.sort(key=lambda f: f.start)
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
    """Every field of one write, scanned before anything is written.

    `texts` are redacted (policy "redact") or refused (policy "refuse", exit 8) all together:
    under "refuse" one secret in any field stops the whole write. `identifiers` (a channel, a
    tag, a section name, a fact's name) cannot carry a `[redacted:...]` marker: a secret there
    is always refused. Returns the cleaned texts and every finding.
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
            refused.append(f"{field}: {describe(found)}")
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


def apply_policy(text: str, policy: str, *, what: str = "text") -> tuple[str, list[Finding]]:
    """Return (text with every secret redacted, findings); raise under policy "refuse".

    The caller warns about the findings (stderr) when the text was redacted.
    """
    check_policy(policy)
    findings = scan(text)
    if not findings:
        return text, []
    if policy == "refuse":
        raise SecretRefusedError(
            f"the {what} contains what looks like a credential: {describe(findings)}; nothing was written",
            "remove the secret (store it in a secret manager and refer to it by name); "
            'or set [secrets] policy = "redact" to write it with the secret redacted',
        )
    return redact(text, findings), findings
