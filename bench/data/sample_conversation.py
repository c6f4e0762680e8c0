"""A small conversation of our own, written for this project (not from LoCoMo), in the shape of a LoCoMo
conversation: ``make test`` runs bench_locomo.py on it, and ``make bench`` falls back to it when the
LoCoMo files are absent. LoCoMo itself is never copied into the repository (``LOCOMO_DIR``)."""

from __future__ import annotations

from typing import Any

CONVERSATION: dict[str, Any] = {
    "speaker_a": "Ines",
    "speaker_b": "Tomas",
    "session_1_date_time": "10:15 am on 4 March, 2024",
    "session_1": [
        {"speaker": "Ines", "dia_id": "D1:1", "text": "Hi Tomas! How was your weekend?"},
        {
            "speaker": "Tomas",
            "dia_id": "D1:2",
            "text": "Busy! I finally repaired the old sailing dinghy my uncle left me.",
        },
        {"speaker": "Ines", "dia_id": "D1:3", "text": "That's great. Are you going to take it out on the lake?"},
        {"speaker": "Tomas", "dia_id": "D1:4", "text": "Yes, next month, once the water is a bit warmer."},
        {
            "speaker": "Ines",
            "dia_id": "D1:5",
            "text": "I started a pottery class on Thursday evenings. My first bowl came out lopsided.",
        },
        {"speaker": "Tomas", "dia_id": "D1:6", "text": "Ha, everyone's first bowl does. What made you pick pottery?"},
        {
            "speaker": "Ines",
            "dia_id": "D1:7",
            "text": "My grandmother used to make clay pots, so it feels like a link to her.",
        },
        {"speaker": "Tomas", "dia_id": "D1:8", "text": "That's lovely. Talk soon!"},
    ],
    "session_2_date_time": "6:40 pm on 21 April, 2024",
    "session_2": [
        {"speaker": "Tomas", "dia_id": "D2:1", "text": "Ines! I took the dinghy out yesterday and capsized twice."},
        {"speaker": "Ines", "dia_id": "D2:2", "text": "Oh no! Were you alright?"},
        {"speaker": "Tomas", "dia_id": "D2:3", "text": "Just wet and cold. The lake was freezing, but I loved it."},
        {"speaker": "Ines", "dia_id": "D2:4", "text": "I have news too: I got the job at the botanical garden."},
        {"speaker": "Tomas", "dia_id": "D2:5", "text": "Congratulations! What will you be doing there?"},
        {"speaker": "Ines", "dia_id": "D2:6", "text": "Looking after the greenhouse orchids and running school tours."},
        {"speaker": "Tomas", "dia_id": "D2:7", "text": "Perfect for you. When do you start?"},
        {"speaker": "Ines", "dia_id": "D2:8", "text": "The first Monday of May."},
    ],
    "session_3_date_time": "1:05 pm on 12 June, 2024",
    "session_3": [
        {
            "speaker": "Ines",
            "dia_id": "D3:1",
            "text": "The orchids are thriving and the school tours are chaotic but fun.",
        },
        {"speaker": "Tomas", "dia_id": "D3:2", "text": "Glad to hear it. I joined a sailing club last week."},
        {"speaker": "Ines", "dia_id": "D3:3", "text": "Nice, fewer capsizes from now on then?"},
        {"speaker": "Tomas", "dia_id": "D3:4", "text": "Hopefully. They race every Saturday morning."},
        {"speaker": "Ines", "dia_id": "D3:5", "text": "I glazed a set of mugs in class, blue like grandma's pots."},
        {"speaker": "Tomas", "dia_id": "D3:6", "text": "Save one for me!"},
    ],
    "qa": [
        {"question": "What did Tomas repair?", "answer": "An old sailing dinghy", "evidence": ["D1:2"], "category": 4},
        {
            "question": "When did Tomas capsize the dinghy?",
            "answer": "20 April 2024",
            "evidence": ["D2:1"],
            "category": 2,
        },
        {
            "question": "Why did Ines pick pottery?",
            "answer": "Her grandmother made clay pots",
            "evidence": ["D1:7"],
            "category": 4,
        },
        {"question": "Where does Ines work?", "answer": "At the botanical garden", "evidence": ["D2:4"], "category": 4},
        {
            "question": "What does Ines do at the botanical garden?",
            "answer": "Greenhouse orchids and school tours",
            "evidence": ["D2:6", "D3:1"],
            "category": 1,
        },
        {
            "question": "When did Ines start her new job?",
            "answer": "The first Monday of May 2024",
            "evidence": ["D2:8"],
            "category": 2,
        },
        {
            "question": "What has Ines made in her pottery class?",
            "answer": "A lopsided bowl and a set of mugs",
            "evidence": ["D1:5", "D3:5"],
            "category": 1,
        },
        {
            "question": "Would Tomas enjoy a weekend regatta?",
            "answer": "Likely yes; he races with a sailing club",
            "evidence": ["D3:2", "D3:4"],
            "category": 3,
        },
        {
            "question": "What did Tomas join in June 2024?",
            "answer": "A sailing club",
            "evidence": ["D3:2"],
            "category": 4,
        },
        {"question": "Who is Tomas's favourite footballer?", "answer": "Never said", "evidence": [], "category": 5},
    ],
}
