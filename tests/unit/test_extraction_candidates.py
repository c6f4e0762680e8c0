"""An extraction answer's candidate records (consolidation.candidates_of): what each names as its sources and
what it is about, for facts, preferences and episodes (validated answers, as the model's JSON becomes)."""

from __future__ import annotations

from agentmem.extraction.consolidation import Candidate, candidates_of
from agentmem.extraction.prompts import Episodes, Facts, Preferences

BY_NUMBER = {1: "entry-a", 2: "entry-b", 3: "entry-c"}


def test_a_fact_names_its_messages_and_what_it_is_about() -> None:
    answer = Facts.model_validate(
        {"facts": [{"text": " Ana plays the cello. ", "about": "Ana", "about_type": "person", "messages": [2, 9, 2]}]}
    )
    # a number the prompt did not show (9) is dropped, a repeat kept once
    assert candidates_of(answer, BY_NUMBER, "alice") == [
        Candidate("Ana plays the cello.", about="Ana", about_type="person", sources=("entry-b",))
    ]


def test_a_preference_is_about_the_actor_and_one_naming_no_message_cites_the_whole_batch() -> None:
    answer = Preferences.model_validate({"preferences": [{"text": "Alice does not eat meat."}]})
    assert candidates_of(answer, BY_NUMBER, "alice") == [
        Candidate(
            "Alice does not eat meat.", about="alice", about_type="person", sources=("entry-a", "entry-b", "entry-c")
        )
    ]


def test_an_episode_is_its_situation_actions_and_outcome() -> None:
    episode = {"situation": "A flat tyre.", "actions": "Alice called Ana.", "outcome": "Fixed.", "messages": [1]}
    answer = Episodes.model_validate({"episodes": [episode]})
    assert candidates_of(answer, BY_NUMBER, "alice") == [
        Candidate("Situation: A flat tyre. Actions: Alice called Ana. Outcome: Fixed.", sources=("entry-a",))
    ]
