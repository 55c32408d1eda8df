"""The VaultmemError tree.

Every error says what went wrong and what to do next, and carries the exit code the CLI maps it
to. The codes are part of the command contract (see README, "Exit codes"):

    0 ok · 1 unexpected · 2 usage · 3 no/invalid vault · 4 not found · 5 integrity problem
    6 lock timeout (retryable) · 7 feature unavailable · 8 refused by policy
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_VAULT = 3
EXIT_NOT_FOUND = 4
EXIT_INTEGRITY = 5
EXIT_LOCK_TIMEOUT = 6
EXIT_UNAVAILABLE = 7
EXIT_REFUSED = 8


class VaultmemError(Exception):
    """Base class: a message, an optional hint (what to do next) and an exit code."""

    exit_code = EXIT_UNEXPECTED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    @property
    def kind(self) -> str:
        """The name used as `error.type` in JSON output."""
        return type(self).__name__


class UsageError(VaultmemError):
    """An argument or option value is invalid (bad name, bad type, empty text)."""

    exit_code = EXIT_USAGE


class VaultError(VaultmemError):
    """No vault could be found, or it cannot be used (broken config, not writable)."""

    exit_code = EXIT_VAULT


class VaultNotFoundError(VaultError):
    pass


class ConfigError(VaultError):
    pass


class NotWritableError(VaultError):
    pass


class NotFoundError(VaultmemError):
    """An agent, fact, entry or file that was asked for does not exist."""

    exit_code = EXIT_NOT_FOUND


class UnknownAgentError(NotFoundError):
    pass


class IntegrityError(VaultmemError):
    """A file vaultmem must read or edit is damaged (broken YAML, bad bytes, mangled index)."""

    exit_code = EXIT_INTEGRITY


class LockTimeoutError(VaultmemError):
    """Another process held a lock longer than the timeout. Retrying later is safe."""

    exit_code = EXIT_LOCK_TIMEOUT


class DiskFullError(LockTimeoutError):
    """The disk (or quota) is full: nothing was written; retry once there is room (exit 6)."""


class UnavailableError(VaultmemError):
    """A feature needs something that is not there (an API key, an optional extra)."""

    exit_code = EXIT_UNAVAILABLE


class RefusedError(VaultmemError):
    """A policy refused the operation (path outside the vault, secret, self-approval)."""

    exit_code = EXIT_REFUSED


class PathOutsideVaultError(RefusedError):
    pass


class SecretRefusedError(RefusedError):
    """Text held a credential and the vault's `[secrets] policy` is "refuse"."""


class SigningKeyMissingError(RefusedError):
    """An append would be unsigned and the vault refuses unsigned entries."""


class EntryNotFoundError(NotFoundError):
    """A log entry or decision id that was asked for does not exist."""


class ReviewRefusedError(RefusedError):
    """The review gate refused: an agent acting, an unknown reviewer, or self-approval."""


class LLMError(UnavailableError):
    """The language model could not be used: no key, rejected key, API error, bad reply."""
