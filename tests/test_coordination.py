"""Coordination that cannot drop a handoff: addressed entries, per-recipient acks, the inbox,
alerts that repeat and resolve, through the library, the CLI and --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import bulk_append, fresh_vault, make_keys, set_toml
from vaultmem.core.vault import Vault
from vaultmem.nexus import coord, entry, log, reading, verify


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """Empty logs, agents ella, lyra and nova with keys on this machine."""
    from vaultmem.app.lifecycle.scaffold import init

    root = fresh_vault(tmp_path)
    init(root, agents=["nova"], reviewers=[])
    make_keys(root)
    return root


def cli(vault: Path, *args: str) -> Any:
    return run_cli(*args, "--vault", str(vault))


def cli_json(vault: Path, *args: str) -> Any:
    res = cli(vault, *args, "--json")
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return json.loads(res.stdout)


def append(vault: Path, agent: str, summary: str, *args: str) -> str:
    res = cli(vault, "append", summary, "--agent", agent, *args)
    assert res.exit_code == 0, res.stderr
    return str(res.stdout.strip())


def pack(vault: Path, agent: str, *args: str) -> dict[str, Any]:
    return cli_json(vault, "read", "--agent", agent, *args)  # type: ignore[no-any-return]


def inbox_ids(vault: Path, agent: str) -> list[str]:
    return [i["id"] for i in cli_json(vault, "inbox", "--agent", agent)["items"]]


def pack_inbox(p: dict[str, Any]) -> list[str]:
    section = p["sections"].get("inbox")
    return [i["id"] for i in section["data"]["items"]] if section else []


# --- the buried handoff ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("after", [60, 5000])
def test_a_buried_handoff_stays_in_the_pack_until_its_recipient_acks(
    vault: Path, after: int
) -> None:
    pack(vault, "ella")  # ella has read before: she has a cursor
    handoff = append(
        vault, "lyra", "Checkout must send Idempotency-Key", "--type", "handoff", "--to", "ella"
    )
    if after <= 100:
        for i in range(after):
            append(vault, "nova", f"noise {i}")
    else:
        bulk_append(vault, "nova", after)
    first = pack(vault, "ella")
    assert next(iter(first["sections"])) == "inbox"
    assert pack_inbox(first) == [handoff]
    assert first["sections"]["new_entries"]["data"]["more"] is True  # the window was capped
    assert handoff not in [e["id"] for e in first["sections"]["new_entries"]["data"]["entries"]]
    # the cursor has moved past it: it is still there, however many reads later
    again = pack(vault, "ella")
    assert pack_inbox(again) == [handoff] and inbox_ids(vault, "ella") == [handoff]
    text = cli(vault, "read", "--agent", "ella").stdout
    assert text.index("## Your inbox (1 open)") < text.index("## Identity of ella")
    # the ack hint runs as written from anywhere: it names the vault and the agent
    assert f"--ack ID --vault {vault} --agent ella" in text and f"[{handoff}]" in text
    # other agents' acks do not count for ella
    append(vault, "nova", "seen it", "--type", "ack", "--ack", handoff)
    assert pack_inbox(pack(vault, "ella")) == [handoff]
    append(vault, "ella", "Checkout sends it now", "--type", "ack", "--ack", handoff)
    assert "inbox" not in pack(vault, "ella")["sections"]
    assert inbox_ids(vault, "ella") == []
    assert verify.verify(Vault.open(vault)).ok


@pytest.mark.slow
def test_an_ack_of_a_buried_handoff_is_not_called_unknown(vault: Path) -> None:
    handoff = append(vault, "lyra", "Old handoff", "--type", "handoff", "--to", "ella")
    bulk_append(vault, "nova", log.ACK_WINDOW + 10)
    res = cli(vault, "append", "done", "--type", "ack", "--ack", handoff, "--agent", "ella")
    assert res.exit_code == 0 and "no such entry" not in res.stderr


# --- per-recipient acks ----------------------------------------------------------------------


def test_acks_count_for_the_agent_that_wrote_them(vault: Path) -> None:
    """Three agents: nova's ack of a handoff addressed to lyra leaves it open for lyra."""
    h = append(vault, "ella", "Calendar uses /v2/slots", "--type", "handoff", "--to", "lyra")
    q = append(vault, "ella", "Who owns the refunds job?", "--type", "question", "--to", "lyra")
    append(vault, "nova", "noted", "--type", "ack", "--ack", h, "--ack", q)
    assert inbox_ids(vault, "lyra") == [h, q]
    assert inbox_ids(vault, "nova") == []  # not addressed to nova: never in its inbox
    item = cli_json(vault, "inbox", "--agent", "lyra")["items"][0]
    assert item["acked_by"] == {"nova": "nova.1"} and item["waiting_for"] == ["lyra"]
    # lyra answers the question with --ack: that closes it for her
    append(vault, "lyra", "Ella does", "--type", "answer", "--ack", q)
    assert inbox_ids(vault, "lyra") == [h]
    # the writer's own pack says who is still waiting
    own = pack(vault, "ella", "--peek")["sections"]["own_entries"]
    by_id = {e["id"]: e for e in own["data"]}
    assert by_id[h]["waiting_for"] == ["lyra"] and by_id[q]["waiting_for"] == []
    assert "waiting for lyra" in own["text"]
    append(vault, "lyra", "using it", "--type", "ack", "--ack", h)
    assert inbox_ids(vault, "lyra") == []


def test_an_agent_s_ack_of_its_own_entry_counts_for_nobody(vault: Path) -> None:
    """Attacker: an agent that wants its handoffs to look handled acks them itself. The index
    and the others' packs ignore that ack: only a recipient's ack closes an entry for it."""
    h = append(vault, "ella", "Rotate the API keys", "--type", "handoff", "--to", "lyra")
    loose = append(vault, "ella", "Anyone: take the migration", "--type", "handoff")
    append(vault, "ella", "handled", "--type", "ack", "--ack", h, "--ack", loose)
    item = cli_json(vault, "inbox", "--agent", "lyra")["items"][0]
    assert item["id"] == h and item["acked_by"] == {} and item["waiting_for"] == ["lyra"]
    assert "acked by" not in cli(vault, "inbox", "--agent", "lyra").stdout
    entries = pack(vault, "lyra", "--peek")["sections"]["new_entries"]["data"]["entries"]
    assert next(e for e in entries if e["id"] == loose)["awaiting_ack"] is True
    assert coord.load(Vault.open(vault)).get(h).acked_by == {}  # type: ignore[union-attr]


def test_a_handoff_to_two_agents_where_one_acks(vault: Path) -> None:
    h = append(
        vault, "ella", "Prices are cents now", "--type", "handoff", "--to", "lyra", "--to", "nova"
    )
    append(vault, "lyra", "front end updated", "--type", "ack", "--ack", h)
    assert inbox_ids(vault, "lyra") == []
    assert inbox_ids(vault, "nova") == [h]
    item = cli_json(vault, "inbox", "--agent", "nova")["items"][0]
    assert item["to"] == ["lyra", "nova"]
    assert item["acked_by"] == {"lyra": "lyra.1"} and item["waiting_for"] == ["nova"]
    assert "(acked by lyra; waiting for nova)" in cli(vault, "inbox", "--agent", "nova").stdout
    # nova's pack flags it in its inbox; lyra's pack shows it on the log, not waiting for her
    lyra = pack(vault, "lyra", "--peek")["sections"]["new_entries"]["data"]["entries"]
    shown = next(e for e in lyra if e["id"] == h)
    assert shown["awaiting_ack"] is False and shown["waiting_for"] == ["nova"]
    append(vault, "nova", "done", "--type", "ack", "--ack", h)
    assert inbox_ids(vault, "nova") == []
    assert coord.load(Vault.open(vault)).get(h) is None  # closed for everyone: dropped


def test_to_all_reaches_every_other_agent(vault: Path) -> None:
    h = append(vault, "ella", "Freeze deploys tonight", "--type", "handoff", "--to", "all")
    assert inbox_ids(vault, "lyra") == [h] and inbox_ids(vault, "nova") == [h]
    assert inbox_ids(vault, "ella") == []
    res = cli(vault, "log", "--to", "nova", "--json")
    assert [e["id"] for e in json.loads(res.stdout)["entries"]] == [h]


def test_unaddressed_handoffs_keep_the_first_ack_closes_rule(vault: Path) -> None:
    h = append(vault, "ella", "Anyone: the staging DB is yours", "--type", "handoff")
    assert inbox_ids(vault, "lyra") == []  # not addressed: not an inbox item
    entries = pack(vault, "lyra", "--peek")["sections"]["new_entries"]["data"]["entries"]
    assert entries[0]["awaiting_ack"] is True
    append(vault, "nova", "taking it", "--type", "ack", "--ack", h)
    entries = pack(vault, "lyra", "--peek")["sections"]["new_entries"]["data"]["entries"]
    assert next(e for e in entries if e["id"] == h)["awaiting_ack"] is False


@pytest.mark.parametrize(
    ("to", "message"),
    [
        ("lyra\n", "not an agent name"),
        ("Lyra", "not an agent name"),
        ("bob", "no such agent"),
        ("ella", "cannot address an entry to itself"),
    ],
)
def test_recipients_are_checked_in_full(vault: Path, to: str, message: str) -> None:
    res = cli(vault, "append", "x", "--to", to, "--agent", "ella")
    assert res.exit_code == 2 and message in res.stderr
    assert "###" not in Vault.open(vault).live_context.read_text().split("---", 2)[-1]


def test_addressed_entries_are_version_2_and_old_bytes_do_not_change(vault: Path) -> None:
    v = Vault.open(vault)
    plain = log.append(v, "ella", "plain note").entry
    addressed = log.append(v, "ella", "for two", to=["nova", "lyra", "nova"]).entry
    assert addressed.to == ("nova", "lyra") and addressed.version == 2
    text = v.live_context.read_text(encoding="utf-8")
    assert " · note → nova, lyra · for two" in text and '"v":2' in text
    assert b'"to"' not in plain.canonical() and b'"v":1' in plain.canonical()
    assert b'"to":["nova","lyra"]' in addressed.canonical()
    # the documented v1 example still hashes to the documented hash (docs/FORMAT.md)
    doc = (Path(__file__).resolve().parent.parent / "docs" / "FORMAT.md").read_text()
    example = doc[doc.index('{"acks":[],"agent":"ella","body":"Stripe') :].split("\n", 1)[0]
    e = entry.entry_from_dict(json.loads(example))
    assert e.compute_hash() == (
        "sha256:e94272a8fe583b9b52a29e16d2644ead12a052a626ad7a09669bc0c27b611905"
    )
    assert verify.verify(v).ok
    # dropping a recipient from the header is an edit the hash catches
    v.live_context.write_text(text.replace("note → nova, lyra", "note → nova"), encoding="utf-8")
    kinds = {p.kind for p in verify.verify(v).problems}
    assert "edited" in kinds


def test_a_decision_and_its_announcement_name_each_other(vault: Path) -> None:
    res = cli(vault, "decide", "Prices in cents", "--why", "no rounding", "--agent", "ella")
    assert res.stdout.strip() == "ella.d1"
    p = pack(vault, "lyra", "--peek")
    new = p["sections"]["new_entries"]
    assert "[ella.1 = decision ella.d1]" in new["text"]
    assert new["data"]["entries"][0]["decision"] == "ella.d1"
    assert "ella.d1" in p["sections"]["decisions"]["text"]


# --- the budget cuts the inbox's list, never the inbox --------------------------------------


def test_a_budget_cuts_the_inbox_list_with_an_exact_count(vault: Path) -> None:
    v = Vault.open(vault)
    for i in range(30):
        log.append(v, "lyra", f"handoff number {i}", type_="handoff", to=["ella"], body="x" * 200)
    full = pack(vault, "ella", "--peek")
    assert full["sections"]["inbox"]["data"]["count"] == 30
    ident = full["sections"]["identity"]["tokens"]
    small = pack(vault, "ella", "--peek", "--budget", str(ident + 400))
    inbox = small["sections"]["inbox"]
    assert list(small["sections"])[:2] == ["inbox", "identity"]
    shown = inbox["data"]["shown"]
    assert 0 < shown < 30 and len(inbox["data"]["items"]) == shown
    assert f"{shown} of 30 shown, {30 - shown} not shown" in inbox["text"]
    assert f"inbox --vault {vault} --agent ella" in inbox["text"]
    assert small["tokens"] <= ident + 400
    tiny = pack(vault, "ella", "--peek", "--budget", "1")
    assert tiny["sections"]["inbox"]["data"]["count"] == 30  # never dropped
    assert "0 of 30 shown" in tiny["sections"]["inbox"]["text"]


# --- alerts ----------------------------------------------------------------------------------


def test_a_repeated_alert_is_not_raised_again(vault: Path) -> None:
    first = append(vault, "nova", "Disk 91% full on db-1", "--type", "alert")
    res = cli(vault, "append", "  disk 91%   FULL on DB-1. ", "--type", "alert", "--agent", "lyra")
    assert res.exit_code == 0 and res.stdout == f"duplicate {first}\n"
    assert "not raised again" in res.stderr
    data = cli_json(vault, "append", "DISK 91% full on db-1", "--type", "alert", "--agent", "ella")
    assert data["duplicate_of"] == first and data["seen_again"] == 2 and data["id"] == first
    other = append(vault, "nova", "Disk 92% full on db-1", "--type", "alert")  # numbers differ
    assert other != first
    alerts = cli_json(vault, "alerts")["alerts"]
    assert [a["id"] for a in alerts] == [first, other]
    assert alerts[0]["seen_again"] == 2 and alerts[0]["last_seen_by"] == "ella"
    entries = reading.log(Vault.open(vault), tail=100)
    assert [e.id for e in entries if e.type == "alert"] == [first, other]
    p = pack(vault, "lyra", "--peek")
    assert [a["id"] for a in p["sections"]["alerts"]["data"]] == [first, other]
    assert "seen again 2×" in p["sections"]["alerts"]["text"]


def test_resolve_by_another_agent_closes_it_and_a_new_raise_links_it(vault: Path) -> None:
    a = append(vault, "nova", "CI red on main", "--type", "alert")
    res = cli(vault, "resolve", a, "--why", "flaky test quarantined", "--agent", "lyra")
    assert res.exit_code == 0 and res.stdout.strip() == f"lyra.1 resolves {a}"
    assert cli_json(vault, "alerts")["alerts"] == []
    everything = cli_json(vault, "alerts", "--all")["alerts"]
    assert everything[0]["resolved"]["by"] == "lyra"
    assert everything[0]["resolved"]["why"] == "flaky test quarantined"
    assert "alerts" not in pack(vault, "ella", "--peek")["sections"]
    again = cli(vault, "resolve", a, "--agent", "ella")
    assert again.exit_code == 0 and "already resolved by lyra" in again.stdout
    new = cli_json(vault, "append", "ci red on main", "--type", "alert", "--agent", "nova")
    assert new["id"] != a and new["reraises"] == a
    assert [x["id"] for x in cli_json(vault, "alerts")["alerts"]] == [new["id"]]
    resolved = reading.log(Vault.open(vault), type_="resolve")[0]
    assert resolved.extra == {"resolves": a} and resolved.acks == (a,)


def test_resolve_by_a_person(vault: Path) -> None:
    a = append(vault, "nova", "Stripe webhook failing", "--type", "alert", "--to", "ella")
    no_key = cli(vault, "resolve", a, "--why", "fixed by hand", "--reviewer", "chiara")
    assert no_key.exit_code == 8 and "keys create --reviewer chiara" in no_key.stderr
    assert cli(vault, "resolve", a, "--reviewer", "ella").exit_code == 8  # an agent is no person
    assert cli(vault, "keys", "create", "--reviewer", "chiara").exit_code == 0
    assert (vault / "people" / "chiara" / "keys.md").is_file()
    res = cli(vault, "resolve", a, "--why", "fixed by hand", "--reviewer", "chiara")
    assert res.exit_code == 0 and res.stdout.strip() == f"chiara.1 resolves {a}"
    assert inbox_ids(vault, "ella") == []  # resolved: gone from the recipient's inbox too
    assert verify.verify(Vault.open(vault)).ok


def test_only_open_things_resolve(vault: Path) -> None:
    note = append(vault, "nova", "just a note")
    res = cli(vault, "resolve", note, "--agent", "ella")
    assert res.exit_code == 2 and "nothing to resolve" in res.stderr
    assert cli(vault, "resolve", "nova.99", "--agent", "ella").exit_code == 4
    assert cli(vault, "resolve", "nova.1\n", "--agent", "ella").exit_code == 2


def test_alerts_leave_the_pack_after_the_window_unless_addressed(vault: Path) -> None:
    set_toml(vault, "alerts", "window", '"2d"')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTMEM_NOW", "2026-11-01T10:00:00Z")
        plain = append(vault, "nova", "Backups late", "--type", "alert")
        mine = append(vault, "nova", "Queue stuck", "--type", "alert", "--to", "ella")
        p = pack(vault, "ella", "--peek")
        assert [a["id"] for a in p["sections"]["alerts"]["data"]] == [plain]
        assert pack_inbox(p) == [mine]
        mp.setenv("VAULTMEM_NOW", "2026-11-03T11:00:00Z")  # older than the window
        p = pack(vault, "ella", "--peek")
        assert "alerts" not in p["sections"]
        assert pack_inbox(p) == [mine]  # open and addressed: stays
        assert [a["id"] for a in cli_json(vault, "alerts")["alerts"]] == [plain, mine]


def test_bad_alert_window_is_a_config_error(vault: Path) -> None:
    set_toml(vault, "alerts", "window", '"7 days"')
    res = cli(vault, "alerts")
    assert res.exit_code == 3 and "[alerts] window" in res.stderr


# --- the index -------------------------------------------------------------------------------


def test_the_index_is_rebuilt_when_the_log_changes_under_it(vault: Path) -> None:
    v = Vault.open(vault)
    h = log.append(v, "ella", "to lyra", type_="handoff", to=["lyra"]).entry
    assert [i.id for i in coord.load(v).inbox("lyra")] == [h.id]
    # a person adds a line above the entries: offsets shift, the cached tail is not in place
    text = v.live_context.read_text(encoding="utf-8")
    v.live_context.write_text(text.replace("\n### ", "\nA note by a person.\n\n### ", 1))
    log.append(v, "lyra", "ok", type_="ack", acks=[h.id])
    assert coord.load(v).inbox("lyra") == []
    # a torn cache is rebuilt too
    coord.index_path(v).write_text("{not json")
    assert coord.load(v).inbox("lyra") == []
    # entries rotated into the archive still count
    h2 = log.append(v, "ella", "old one", type_="handoff", to=["nova"]).entry
    from vaultmem.nexus.rotate import rotate

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTMEM_NOW", "2099-01-01T00:00:00Z")
        rotate(v, keep_days=1)
    assert [i.id for i in coord.load(v).inbox("nova")] == [h2.id]


def test_a_device_id_starting_with_d_is_not_a_decision(vault: Path) -> None:
    """Device ids are lowercase base32 (`d7zz` among them): a live entry on such a chain is
    no decision. `resolve` refused the alert `lyra.d7zz.2` as one (found by a test run on a
    machine whose device id started with d)."""
    from vaultmem.core.errors import UsageError, VaultmemError
    from vaultmem.nexus import alerts

    assert [entry.is_decision(i) for i in ("ella.d3", "ella.k2f7.d3")] == [True, True]
    assert [entry.is_decision(i) for i in ("ella.12", "lyra.d7zz.2")] == [False, False]
    v = Vault.open(vault)
    with pytest.raises(UsageError, match="is a decision"):
        alerts.resolve(v, "ella", "lyra.d7zz.d2")
    with pytest.raises(VaultmemError) as found:  # no such alert here: not found, no decision
        alerts.resolve(v, "ella", "lyra.d7zz.2")
    assert "is a decision" not in found.value.message
