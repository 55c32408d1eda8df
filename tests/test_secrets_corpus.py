"""The secret scanner against a corpus: one sample per format it must catch (the formats an
adversarial review got past the first scanner), and ordinary text it must leave alone.

All samples are fake: documentation examples or random-looking strings made up for this file.
"""

from __future__ import annotations

import pytest

from vaultmem.core.secrets import redact, scan

ZWSP = "\u200b"

# (what it is, text containing it, the secret that must not survive redaction)
CAUGHT = [
    (
        "bare AWS secret",
        "the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "secret_access_key:",
        "secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI",
    ),
    ("AWS key id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    (
        "Azure storage",
        "DefaultEndpointsProtocol=https;AccountName=orbit;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE9PQ==;EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4",
    ),
    (
        "Azure Service Bus",
        "Endpoint=sb://orbit.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9z0x1c=",
        "q1w2e3r4t5y6u7i8o9p0",
    ),
    (
        "Azure SAS",
        "https://orbit.blob.core.windows.net/c?sv=2022-11-02&ss=b&sig=Jq5bOc8qzhy4Zp%2FhXyW7QOe9LrR1o3eXgP2nF0AbCdE%3D",
        "Jq5bOc8qzhy4Zp",
    ),
    (
        "Authorization Bearer",
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abc.def123' x",
        "eyJhbGciOiJIUzI1NiJ9abc",
    ),
    ("Authorization Basic", "Authorization: Basic b3JiaXQ6aHVudGVyMjI=", "b3JiaXQ6aHVudGVyMjI"),
    (
        "bare bearer",
        "use bearer 7f3a9c2e1b4d5f6a7b8c9d0e1f2a3b4c for staging",
        "7f3a9c2e1b4d5f6a7b8c9d0e1f2a3b4c",
    ),
    ("x-api-key", "x-api-key: 9a8b7c6d5e4f3a2b1c0d", "9a8b7c6d5e4f3a2b1c0d"),
    ("SECRET_KEY=", "SECRET_KEY=django-insecure-9x!k2@p4#q8", "django-insecure-9x!k2@p4#q8"),
    ("*_PASS=", "SMTP_PASS=Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("PGPASSWORD=", "PGPASSWORD=hunter2xyz psql -h db", "hunter2xyz"),
    ("password=", "password=hunter22", "hunter22"),
    ("mysql -p", "mysql -u root -pS3cretPass orbit < dump.sql", "S3cretPass"),
    ("mysql --password=", "mysqldump --password=S3cretPass orbit", "S3cretPass"),
    (
        "PEM",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA",
    ),
    (
        "PEM split over lines",
        "-----BEGIN RSA PRIVATE\nKEY-----\nMIIEowIBAAKCAQEAx\n-----END RSA PRIVATE\nKEY-----",
        "MIIEowIBAAKCAQEAx",
    ),
    (
        "PEM without header",
        "key body:\nMIIEowIBAAKCAQEA7bq1yZ0XH0Yv8w9QmX2nL3pT4rS5uV6wX7yZ8aB9cD0eF1gH2iJ3kL4m\nN5oP6qR7sT8uV9wX0yZ1aB2cD3eF4gH5iJ6kL7mN8oP9qR0sT1uV2wX3yZ4aB5cD6eF7g\n",
        "MIIEowIBAAKCAQEA7bq1",
    ),
    (
        "OpenSSH body",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9\n",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    (
        "PuTTY key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5\nPrivate-Lines: 1\nAAAAIBuq2vvvQ8jRz\nPrivate-MAC: 6f3c9a",
        "AAAAIBuq2vvvQ8jRz",
    ),
    (
        "npm token",
        "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    (
        "npm token bare",
        "token npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 works",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    (
        "SendGrid",
        "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",
        "TwL2iGABf9DHoTf",
    ),
    (
        "Slack webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    (
        "Discord webhook",
        "https://discord.com/api/webhooks/123456789012345678/abcDEF_ghiJKL-mnoPQRstuVWXyz0123456789",
        "abcDEF_ghiJKL",
    ),
    ("zero-width space in a key", f"ghp_{'x' * 10}{ZWSP}{'y' * 26}", "xxxxxxxxxx"),
    ("zero-width space in AWS id", f"AKIAIOSF{ZWSP}ODNN7EXAMPLE", "ODNN7EXAMPLE"),
    ("GitHub token", "ghp_" + "x" * 36, "ghp_"),
    ("Anthropic key", "sk-ant-api03-" + "a1B2" * 10, "a1B2a1B2"),
    ("URL credentials", "postgres://orbit:pa55word@db/x", "pa55word"),
]


@pytest.mark.parametrize(("what", "text", "secret"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_every_format_is_caught(what: str, text: str, secret: str) -> None:
    findings = scan(text)
    assert findings, f"{what}: nothing found"
    assert secret not in redact(text, findings).replace(ZWSP, "")


# ordinary text an agent writes every day: none of it may trigger
ORDINARY = [
    "Webhook retries are idempotent now; we store the event id.",
    "The password is kept in the team vault, ask Chiara.",
    "Bearer tokens are rotated daily by the gateway.",
    "Use bearer authentication for the public API.",
    "Tests pass: 42/42 on CI, coverage 91%.",
    "token bucket rate limiter with 100 requests per minute",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the race",
    "sha256:e94272a8fe583b9b52a29e16d2644ead12a052a626ad7a09669bc0c27b611905",
    "UUID 123e4567-e89b-12d3-a456-426614174000 identifies the tenant",
    "See [[memory/stripe-webhook-race|Stripe webhook race]] and agents/ella/bank/2026-11-29-x.md",
    "src/components/checkout/PaymentForm/index.test.tsx fails on Safari",
    "key: value pairs in YAML are fine; api_key: <from the environment>",
    "password=${DB_PASSWORD} comes from the environment",
    "The secret sauce is caching the price list for 5 minutes.",
    "Authorization is handled by the middleware in auth/policy.py",
    "mysql -u root -p orbit  (it prompts for the password)",
    "Prices are stored in integer cents; VAT included for gyms.",
    "base64 of 'hello' is aGVsbG8=",
    "Run `pytest -q --maxfail=1 tests/test_log.py::test_append` before pushing.",
    "Il deploy di venerdì è rimandato: aspettiamo la revisione di Chiara.",
    "https://github.com/simonw/sqlite-utils/blob/main/sqlite_utils/db.py#L120",
    "The SAS signature check (sig=...) happens in storage.py",
    "ella.12 acked lyra.3; nova.d2 supersedes ella.d1",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scan(text) == []
