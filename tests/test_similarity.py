"""Dedupe in every language vaultmem supports: the vault's own stop words are ignored, and its
negations flip the meaning (issue 25: an Italian negated fact was taken for a repeat of its
opposite)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import REPO, run_cli
from vaultmem.bank.similarity import NEGATIONS, signature, similarity
from vaultmem.core.config import SUPPORTED_LANGUAGES
from vaultmem.core.stopwords import STOPWORDS

# (a fact, the same fact negated, function words of the language that occur in the fact)
FACTS = {
    "en": ("Chiara wants to review the migrations on Friday",
           "Chiara does not want to review the migrations on Friday", {"to", "the", "on"}),
    "it": ("Chiara vuole rivedere le migrazioni il venerdì",
           "Chiara non vuole rivedere le migrazioni il venerdì", {"le", "il"}),
    "de": ("Chiara will die Migrationen am Freitag prüfen",
           "Chiara will die Migrationen am Freitag nicht prüfen", {"die", "am"}),
    "fr": ("Chiara veut relire les migrations le vendredi",
           "Chiara ne veut pas relire les migrations le vendredi", {"les", "le"}),
    "es": ("Chiara quiere revisar las migraciones el viernes",
           "Chiara no quiere revisar las migraciones el viernes", {"las", "el"}),
    "pt": ("A Chiara quer rever as migrações na sexta-feira",
           "A Chiara não quer rever as migrações na sexta-feira", {"a", "as", "na"}),
    "nl": ("Chiara wil de migraties op vrijdag nakijken",
           "Chiara wil de migraties op vrijdag niet nakijken", {"de", "op"}),
}  # fmt: skip


def test_every_supported_language_has_its_words() -> None:
    assert set(FACTS) == set(SUPPORTED_LANGUAGES) == set(NEGATIONS) == set(STOPWORDS)


@pytest.mark.parametrize("lang", sorted(FACTS))
def test_a_negated_fact_conflicts_with_its_opposite(lang: str) -> None:
    fact, negated, _function = FACTS[lang]
    score, conflict = similarity(signature(negated, lang), signature(fact, lang))
    assert conflict, (lang, score)
    # the reverse too: the negated fact first, its opposite proposed later
    assert similarity(signature(fact, lang), signature(negated, lang))[1]


@pytest.mark.parametrize("lang", sorted(FACTS))
def test_the_languages_function_words_carry_no_weight(lang: str) -> None:
    fact, _negated, function = FACTS[lang]
    words = signature(fact, lang).words
    assert not words & function, (lang, words & function)
    assert "chiara" in words and len(words) >= 3


@pytest.mark.parametrize("lang", sorted(set(FACTS) - {"en"}))
def test_english_rules_alone_would_miss_the_negation_or_the_function_words(lang: str) -> None:
    """The control: with English words the same pairs are judged wrongly (the bug)."""
    fact, negated, function = FACTS[lang]
    missed_negation = not similarity(signature(negated, "en"), signature(fact, "en"))[1]
    kept_function_words = bool(signature(fact, "en").words & (function - STOPWORDS["en"]))
    assert missed_negation or kept_function_words


def test_an_unknown_language_falls_back_to_english() -> None:
    assert signature("the cat is not here", "xx") == signature("the cat is not here", "en")


def test_the_stop_word_file_is_what_the_generator_writes() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_stopwords.py"), "--check"], timeout=60
    )
    assert proc.returncode == 0, "regenerate it: python scripts/gen_stopwords.py"


def test_an_italian_vault_keeps_a_negated_fact_apart(vault: Path) -> None:
    toml = vault / "vaultmem.toml"
    text = toml.read_text()
    toml.write_text(
        text.replace('language = "en"', 'language = "it"')
        if 'language = "en"' in text
        else 'language = "it"\n' + text
    )

    def retain(fact: str) -> dict[str, object]:
        res = run_cli("retain", fact, "--type", "preference", "--agent", "ella",
                      "--vault", str(vault), "--json")  # fmt: skip
        assert res.exit_code == 0, res.stderr
        return json.loads(res.stdout)  # type: ignore[no-any-return]

    first = retain("Chiara vuole rivedere le migrazioni il venerdì")
    second = retain("Chiara non vuole rivedere le migrazioni il venerdì")
    assert first["outcome"] == "inserted"
    assert second["outcome"] != "duplicate", second
    assert second["id"] != first["id"]


def test_consolidation_in_an_italian_vault_proposes_a_contradiction_not_a_merge(
    vault: Path,
) -> None:
    """Consolidation compares memories in the vault's language too: with English rules alone
    'non' is a content word and the two facts below merge as near-duplicates."""
    from vaultmem.bank.consolidate import find_clusters
    from vaultmem.core.vault import Vault
    from vaultmem.memory import facts

    toml = vault / "vaultmem.toml"
    text = toml.read_text()
    toml.write_text(
        text.replace('language = "en"', 'language = "it"')
        if 'language = "en"' in text
        else 'language = "it"\n' + text
    )
    v = Vault.open(vault)
    assert v.config.language == "it"
    yes = facts.remember(
        v, "Chiara vuole rivedere le migrazioni il venerdì.", name="Revisioni", type_="preference"
    )
    no = facts.remember(
        v, "Chiara non vuole rivedere le migrazioni il venerdì.", name="Venerdì", type_="preference"
    )
    pair = [c for c in find_clusters(Vault.open(vault), None) if {yes.id, no.id} <= set(c.ids)]
    assert [c.kind for c in pair] == ["supersede"], pair
