"""The grammars of names, each written once (always used with `fullmatch`).

An agent's or a reviewer's name is also a folder (`agents/<agent>/`), part of file names and of
every entry id (`ella.12`), so it is short, lowercase and plain. A device id names one machine's
chain of an agent (`ella.k2f7.12`). This module imports nothing but `re`: the prompt hook's
quick path uses it before anything heavy loads.
"""

from __future__ import annotations

import re

AGENT_NAME = r"[a-z0-9][a-z0-9_-]{0,39}"  # agents and reviewers
AGENT_NAME_RE = re.compile(AGENT_NAME)
DEVICE = r"[a-z2-7]{4}"  # lowercase base32
DEVICE_RE = re.compile(DEVICE)
