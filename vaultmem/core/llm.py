"""The only module that imports `anthropic`: one forced tool call, its errors, its usage.

Every model call vaultmem makes (facts from a transcript, digests of log periods, profiles)
is the same shape: stable instructions and one tool definition first, both marked
`cache_control` so later requests read them from the prompt cache (once the prefix reaches the
model's minimum cacheable length: 4,096 tokens for Haiku 4.5; below it the marker costs
nothing), then one user message, and `tool_choice` forcing that tool. The reply's tool input is
the structured output. Callers redact what they send (`secrets.redact_outbound`) and scrub what
they write.

The SDK retries what it considers retryable (429, 5xx including 529 overloaded, timeouts,
connection errors) with its own backoff; the number of retries and the timeout come from
`[llm]`. Every other failure is an `LLMError` (exit 7) saying that nothing was written: callers
collect every reply before writing anything.
"""

from __future__ import annotations

from typing import Any

from vaultmem.core.config import LLMSettings
from vaultmem.core.environment import ENV_ANTHROPIC_KEY
from vaultmem.core.errors import LLMError
from vaultmem.core.records import field, record

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@record(frozen=False)
class Session:
    """One client for a run of requests, with what they cost so far."""

    settings: LLMSettings
    client: Any
    requests: int = 0
    usage: dict[str, int] = field(default_factory=dict)

    def count(self, reply: Any) -> None:
        self.requests += 1
        for key in USAGE_KEYS:
            value = getattr(getattr(reply, "usage", None), key, None)
            if isinstance(value, int):
                self.usage[key] = self.usage.get(key, 0) + value


def require_key(api_key: str | None, what: str, hint: str) -> str:
    if not api_key:
        raise LLMError(
            f"{what} needs an Anthropic API key and {ENV_ANTHROPIC_KEY} is not set", hint
        )
    return api_key


def session(settings: LLMSettings, api_key: str, base_url: str | None) -> Session:
    import anthropic

    client = anthropic.Anthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=settings.max_retries,
        timeout=settings.timeout,
    )
    return Session(settings, client)


def cached_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool definition with the cache marker: it never changes between requests."""
    return {**tool, "cache_control": {"type": "ephemeral"}}


def call(sess: Session, instructions: str, tool: dict[str, Any], user_text: str) -> Any:
    """One request forcing `tool`; the reply, or LLMError (exit 7) with the cause."""
    import anthropic

    settings = sess.settings
    try:
        reply = sess.client.messages.create(
            model=settings.model,
            max_tokens=settings.max_tokens,
            system=[{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}],
            tools=[cached_tool(tool)],
            tool_choice={"type": "tool", "name": tool["name"]},
            messages=[{"role": "user", "content": user_text}],
        )
    except anthropic.AuthenticationError as exc:
        raise LLMError(
            "the Anthropic API rejected the key (401 authentication error); nothing was written",
            f"check {ENV_ANTHROPIC_KEY}",
        ) from exc
    except anthropic.PermissionDeniedError as exc:
        raise LLMError(
            f"the Anthropic API refused the request (403): {_api_message(exc)}; nothing was written",
            f"check that the key may use model {settings.model!r}",
        ) from exc
    except anthropic.APITimeoutError as exc:
        raise LLMError(
            f"the Anthropic API did not answer within {settings.timeout:g}s "
            f"(after {settings.max_retries} retries); nothing was written",
            "try again later, or raise [llm] timeout in vaultmem.toml",
        ) from exc
    except anthropic.APIConnectionError as exc:
        raise LLMError(
            f"cannot reach the Anthropic API: {exc}; nothing was written",
            "check the network (and ANTHROPIC_BASE_URL if you set it)",
        ) from exc
    except anthropic.APIStatusError as exc:
        retried = (
            " after retries" if exc.status_code in (408, 409, 429) or exc.status_code >= 500 else ""
        )
        raise LLMError(
            f"the Anthropic API answered {exc.status_code}{retried}: {_api_message(exc)}; "
            "nothing was written",
            "try again later" if retried else "see the message above",
        ) from exc
    sess.count(reply)
    return reply


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))


MALFORMED_HINT = "try again; if it keeps happening, try another [llm] model"


def tool_input(reply: Any, name: str, hint_cut: str) -> dict[str, Any]:
    """The input of the reply's `name` tool call; LLMError for a cut-off or malformed reply."""
    if getattr(reply, "stop_reason", None) == "max_tokens":
        raise LLMError("the model's reply was cut off at max_tokens; nothing was written", hint_cut)
    calls = [
        b
        for b in getattr(reply, "content", None) or []
        if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == name
    ]
    if not calls:
        raise LLMError(
            f"the model's reply was malformed (no {name} call); nothing was written",
            MALFORMED_HINT,
        )
    data = calls[0].input
    if not isinstance(data, dict):
        raise LLMError(
            f"the model's reply was malformed ({name} input is not an object); nothing was written",
            MALFORMED_HINT,
        )
    return data


def malformed(why: str) -> LLMError:
    return LLMError(f"the model's reply was malformed ({why}); nothing was written", MALFORMED_HINT)
