"""How the help reads: paragraphs that flow, brackets that stay, metavars people can read.

Applied once to each click command as `cli/lazy.py` builds it (and to the root group when its
help is formatted), so the command modules keep writing plain docstrings and `help=` strings:

- a docstring's line breaks are where its source lines end, not where a sentence does: each
  paragraph is joined into one line (typer keeps single line breaks in rich mode);
- help text is rich markup to typer, so `[env VAULTMEM_VAULT]` or `[working] ttl` would vanish
  as unknown tags: every bracket is escaped, the way `rich.markup.escape` does it (rich itself
  is imported only by `cli/output*.py`);
- typer 0.29 shows each value's Python type (`<bool>`, `<list[str]>`, `{summary}`): a flag shows
  nothing, a value its kind in capitals (`TEXT`, `N`, `PATH`), an argument its name (`QUERY`,
  `[QUERY]` when optional, as click writes it), an option whose value has a better name than
  its type that name (`--ack ID`, `--since WHEN`, `_BY_NAME`), a short choice list itself
  (`week|month`) and a long one its name, the choices then ending the help (a long list would
  fold mid-word in the type column); a `metavar=` written on the option wins.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

HELP_NAMES = ["-h", "--help"]

# what rich reads as a tag (its RE_TAGS): `[` then a small letter, `#`, `/` or `@`, up to the
# next `]`; `[OPTIONS]` is left alone by rich, and so here (an escape there would show)
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
# a line that starts a list item or a block keeps its line break
_BLOCK = re.compile(r"\s|[-*•] |\d+[.)] |\|")
# the value kind typer names -> what the help shows
_KINDS = {"int": "N", "float": "NUMBER", "str": "TEXT", "path": "PATH", "Path": "PATH"}
_SHORT_CHOICES = 20  # up to this many characters, `a|b|c` is the metavar itself
# options whose value has a better name than its type, by parameter name, on every command
_BY_NAME = {
    "agent": "NAME",
    "agents": "NAME",
    "reviewer": "NAME",
    "reviewers": "NAME",
    "to": "AGENT",
    "reader": "AGENT",
    "channel": "NAME",
    "thread": "NAME",
    "acks": "ID",
    "supersedes": "ID",
    "into": "ID",
    "since": "WHEN",
    "until": "WHEN",
    "ttl": "DURATION",
    "older_than": "AGE",
    "keep_days": "DAYS",
    "valid_until": "DATE",
    "tags": "TAG",
    "under": "FOLDER",
    "from": "FILE",
    "debounce": "SECONDS",
    "interval": "SECONDS",
}


def escape(text: str) -> str:
    """`text` with every bracket that rich would read as markup escaped."""

    def one(match: re.Match[str]) -> str:
        slashes, tag = match.groups()
        return f"{slashes}{slashes}\\{tag}"

    return _TAG.sub(one, text)  # rendered alone: rich's extra backslash at the end would show


def flow(text: str) -> str:
    """Each paragraph of `text` on one line; list items and indented blocks keep their breaks."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out = []
    for para in paragraphs:
        if para.startswith("\b"):  # click's "do not rewrap" marker
            out.append(para)
            continue
        lines = para.split("\n")
        joined = lines[0]
        for line in lines[1:]:
            joined += ("\n" if _BLOCK.match(line) else " ") + line.strip()
        out.append(joined)
    return "\n\n".join(out)


def _words(text: str | None) -> str | None:
    return escape(flow(text)) if text else text


def _choices(param: Any) -> str | None:
    desc = getattr(param, "type_descriptor", None)  # typer's description of the parameter
    if desc is None or not getattr(desc, "is_choice", False) or not desc.choices:
        return None
    return "|".join(str(getattr(c, "value", c)) for c in desc.choices)


def metavar(param: Any) -> str | None:
    """What the help shows after an option or as an argument's name; None leaves typer's."""
    if param.metavar is not None:
        return None  # written on the option: kept
    name = str(param.name or "").rstrip("_")
    if getattr(param, "param_type_name", "") == "argument":
        return name.upper().replace("_", "-")
    if getattr(param, "is_flag", False) and not getattr(param, "count", False):
        return ""
    choices = _choices(param)
    if choices:
        # a long list folds mid-word in the narrow type column: it goes into the help instead
        return choices if len(choices) <= _SHORT_CHOICES else name.upper()
    if name in _BY_NAME:
        return _BY_NAME[name]
    bare = getattr(param, "bare_type", None)
    kind = bare() if callable(bare) else ""
    kind = re.sub(r"^list\[(.*)\]$", r"\1", str(kind))
    return _KINDS.get(kind, "TEXT")


def _usage(param: Any) -> Any:
    """An argument in the usage line the way click writes it: `QUERY`, `[QUERY]`, `ID...`."""
    name = str(param.metavar) + ("..." if param.nargs != 1 else "")
    piece = name if param.required else f"[{name}]"
    return lambda ctx: [piece]


def polish(command: Any) -> None:
    """Flow, escape and name the metavars of `command` and every subcommand, in place (once:
    escaping twice would show the backslashes)."""
    if getattr(command, "_vaultmem_polished", False):
        return
    command._vaultmem_polished = True
    command.help = _words(command.help)
    if command.short_help:
        command.short_help = _words(command.short_help)
    if command.epilog:
        command.epilog = escape(command.epilog)
    # click makes the help option on first use: make it now, under the names every context
    # inherits from the root, so that it is polished too
    from vaultmem.cli.typer_internals import click

    params = list(command.params)
    helper = command.get_help_option(click.Context(command, help_option_names=HELP_NAMES))
    if helper is not None:
        params.append(helper)
    for param in params:
        if getattr(param, "help", None):
            param.help = _words(param.help)
        choices = _choices(param)
        long = choices is not None and len(choices) > _SHORT_CHOICES
        if choices and long and not all(c in (param.help or "") for c in choices.split("|")):
            param.help = f"{param.help or ''} One of: {choices.replace('|', ', ')}.".strip()
        shown = metavar(param)
        if shown is not None:
            param.metavar = shown
        if getattr(param, "param_type_name", "") == "argument":
            # the name column says what it is; a type column only for a choice
            param.get_usage_pieces = _usage(param)
            shown_type = None if long else choices
            param.display_type_rich = lambda ctx, shown=shown_type: shown
    for sub in getattr(command, "commands", {}).values():
        polish(sub)
