"""Text piped into vaultmem that reads as a diff or as code, fenced so Obsidian shows it as such.

`git diff | vaultmem append "…" --body -` used to store the patch as markdown: `+` and `-`
lines became lists, `#include` a heading, indentation a code block here and there. `fence_code`
wraps such text in a code fence (```` ```diff ```` for a diff, ```` ``` ```` for other code)
longer than any run of backticks inside it, so nothing in the text can close it. The rule, one
pass over the lines (linear time):

- text that already opens with a fence (```` ``` ```` or `~~~`), or is blank, is left as it is;
- a **diff**: a line starting `diff --git `, a hunk header `@@ -N[,N] +N[,N] @@`, or a `--- `
  line followed by a `+++ ` line;
- **code**: at least two lines that look like code, and more than half of the lines that are
  not blank: indented by a tab or four spaces, or ending in `;` `{` `}` `(` `[` `)` `=>`
  `):`, or starting with a closing bracket, `#include`, `import `,
  `from X import`, `def `, `class `, `fn `, `func `, `return `, `const `, `let `, `var `,
  `#!/`. A markdown list item, quote or heading never counts (prose with structure is
  markdown already).

The CLI applies it to a body read from standard input (`append --body -`, both the typer
command and the start-up fast path go through `cli/hot.py`) and the MCP server's append tool
to the body it receives (an agent that pastes a patch gets the same fence).
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_FENCE_OPEN = re.compile(r"[ ]{0,3}(?:`{3,}|~{3,})")
_TICKS = re.compile(r"`+")
_MARKDOWN = re.compile(r"(?:[-*+] |> |#{1,6} |\d{1,9}[.)] )")
_CODE_START = re.compile(
    r"(?:[}\])]|#include\b|#!/|import \S|from \S+ import |def \w|class \w|fn \w|func \w|"
    r"return\b|const \w|let \w|var \w|pub \w|package \w|async def \w)"
)
_CODE_END = re.compile(r"(?:[;{}(\[)]|=>|\):)$")


def looks_like_diff(lines: list[str]) -> bool:
    previous = ""
    for line in lines:
        if line.startswith("diff --git ") or _HUNK.match(line):
            return True
        if line.startswith("+++ ") and previous.startswith("--- "):
            return True
        previous = line
    return False


def _code_line(line: str) -> bool:
    if line.startswith(("\t", "    ")):
        return True
    text = line.strip()
    if _MARKDOWN.match(text):
        return False
    return bool(_CODE_START.match(text) or _CODE_END.search(text))


def looks_like_code(lines: list[str]) -> bool:
    filled = [ln for ln in lines if ln.strip()]
    code = sum(1 for ln in filled if _code_line(ln))
    return code >= 2 and code * 2 > len(filled)


def fence_for(text: str) -> str:
    """Backticks enough to open a fence nothing in `text` closes: three, or one more than its
    longest run."""
    longest = max((len(m.group()) for m in _TICKS.finditer(text)), default=0)
    return "`" * max(3, longest + 1)


def fence_code(text: str) -> str:
    """`text` fenced when it reads as a diff (```` ```diff ````) or as code (```` ``` ````);
    otherwise `text` itself."""
    body = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not body.strip():
        return text
    lines = body.split("\n")
    first = next(ln for ln in lines if ln.strip())
    if _FENCE_OPEN.match(first):
        return text
    if looks_like_diff(lines):
        lang = "diff"
    elif looks_like_code(lines):
        lang = ""
    else:
        return text
    fence = fence_for(body)
    return f"{fence}{lang}\n{body}\n{fence}"
