"""The credential scanner: what it finds, what it leaves alone, redact vs refuse."""

from __future__ import annotations

import pytest

from vaultmem.core.errors import ConfigError, SecretRefusedError
from vaultmem.core.secrets import apply_policy, scan

SECRETS = [
    ("anthropic-key", "sk-ant-api03-" + "a1B2" * 10),
    ("openai-key", "sk-proj-" + "Zx9_" * 8),
    ("stripe-key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
    ("github-token", "ghp_" + "x" * 36),
    ("github-token", "github_pat_" + "A1_b" * 12),
    ("google-api-key", "AIza" + "S" * 35),
    ("slack-token", "xoxb-1234567890-abcdefghij"),
]


@pytest.mark.parametrize(("kind", "secret"), SECRETS)
def test_provider_keys_are_found_and_redacted(kind: str, secret: str) -> None:
    text = f"deployed with {secret} yesterday"
    out, findings = apply_policy(text, "redact")
    assert [f.kind for f in findings] == [kind]
    assert out == f"deployed with [redacted:{kind}] yesterday"
    assert secret not in repr(findings[0].to_dict())


def test_private_key_block_is_redacted_whole() -> None:
    text = (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nthanks"
    )
    out, findings = apply_policy(text, "redact")
    assert out == "key:\n[redacted:private-key]\nthanks"
    assert findings[0].line == 2


def test_unterminated_private_key_block_is_redacted_to_the_end() -> None:
    out, _ = apply_policy("x\n-----BEGIN PRIVATE KEY-----\nMIIE", "redact")
    assert out == "x\n[redacted:private-key]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter22", "password=[redacted:password]"),
        ('DB_PASSWORD="s3cr3t!!"', "DB_PASSWORD=[redacted:password]"),
        ("api_key: abcd1234efgh", "api_key: [redacted:password]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [redacted:aws-secret-key]",
        ),
        ("postgres://orbit:pa55word@db/x", "postgres://orbit:[redacted:url-credentials]@db/x"),
    ],
)
def test_assignments_redact_only_the_value(text: str, expected: str) -> None:
    assert apply_policy(text, "redact")[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "the password is stored in the team vault",
        "password: [redacted:password]",
        'api_key = os.environ["STRIPE_KEY"]',
        "token: ${GITHUB_TOKEN}",
        "set password=<your password>",
        "sk-short",
        "Fixed the Stripe webhook race (see [[stripe-webhook-race]])",
    ],
)
def test_prose_and_placeholders_are_left_alone(text: str) -> None:
    assert scan(text) == []
    assert apply_policy(text, "redact") == (text, [])


def test_refuse_policy_raises_exit_8_and_names_kind_and_line() -> None:
    with pytest.raises(SecretRefusedError) as info:
        apply_policy("ok\nuse AKIAIOSFODNN7EXAMPLE", "refuse", what="summary")
    assert info.value.exit_code == 8
    assert "aws-access-key (line 2)" in info.value.message
    assert "AKIAIOSFODNN7EXAMPLE" not in str(info.value)


def test_refuse_policy_passes_clean_text() -> None:
    assert apply_policy("all good", "refuse") == ("all good", [])


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        apply_policy("x", "ignore")


def test_several_secrets_all_redacted_in_order() -> None:
    text = "a AKIAIOSFODNN7EXAMPLE b password=hunter22 c ghp_" + "y" * 36
    out, findings = apply_policy(text, "redact")
    assert [f.kind for f in findings] == ["aws-access-key", "password", "github-token"]
    assert out == (
        "a [redacted:aws-access-key] b password=[redacted:password] c [redacted:github-token]"
    )
