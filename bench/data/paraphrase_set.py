# ruff: noqa: RUF001  (the Chinese queries end with a full-width question mark, as Chinese is written)
"""The labelled paraphrase set of the retrieval benchmark, generated deterministically (seed 3).

Thirty kinds of personal fact, each with a stored sentence and a query that asks for it in other
words (most share no content word with the stored text); some queries are asked in Spanish, French,
Arabic or Chinese. Each of 20 users gets 15 facts (300 memories) and 5 queries (100 queries), each
query labelled with the one memory that answers it. Searches run per user, as the API does.
:func:`negatives` asks each user about 5 kinds of fact they never told, in English and in every
language the kind has (259 queries whose right answer is: nothing).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = ["Lucia", "Omar", "Mei", "Jonas", "Amara", "Pedro", "Ines", "Kenji", "Sofia", "Tariq", "Elena", "Noah"]
CITIES = ["Lisbon", "Toronto", "Nairobi", "Osaka", "Melbourne", "Krakow", "Bogota", "Dublin", "Seoul", "Marseille"]
PETS = ["beagle", "tabby cat", "parrot", "rabbit", "golden retriever", "hamster"]
FOODS = ["peanuts", "shellfish", "strawberries", "sesame", "kiwi"]
JOBS = ["structural engineer", "accountant", "pharmacist", "graphic designer", "electrician", "librarian"]
MONTHS = ["March", "June", "September", "December", "April", "October"]
COLORS = ["red", "silver", "green", "white", "dark blue"]
CARS = ["Volvo estate", "Toyota Corolla", "Fiat Panda", "Ford pickup", "Honda Civic"]
HOBBIES = ["rock climbing", "birdwatching", "sailing", "trail running", "pottery classes"]
LANGS = ["Japanese", "Portuguese", "Arabic", "German", "Korean"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
INSTRUMENTS = ["cello", "clarinet", "trumpet", "viola", "oboe"]
FEARS = ["spiders", "deep water", "heights", "thunderstorms", "snakes"]
TEAMS = ["Arsenal", "Boca Juniors", "Ajax", "Celtic", "Benfica"]
BOOKS = ["War and Peace", "Middlemarch", "The Name of the Rose", "One Hundred Years of Solitude", "Dune"]
MEDS = ["lisinopril", "amlodipine", "losartan", "bisoprolol"]
DISHES = ["lasagne", "pad thai", "paella", "ramen", "moussaka"]
BANKS = ["a credit union near the station", "an online-only bank", "the post office savings scheme"]
FILMS = ["Casablanca", "Spirited Away", "The Godfather", "Amelie", "Parasite"]

# kind: (stored sentence, English paraphrase query, {language: translated query})
KINDS: dict[str, tuple[str, str, dict[str, str]]] = {
    "pet": (
        "We adopted a {pet} called {name} last spring.",
        "What animal lives with me at home?",
        {"es": "¿Qué mascota tengo en casa?", "zh": "我家里养了什么动物？"},
    ),
    "allergy": (
        "I break out in hives whenever I eat {food}.",
        "Which food gives me an allergic reaction?",
        {"fr": "À quel aliment suis-je allergique ?", "ar": "ما الطعام الذي يسبب لي الحساسية؟"},
    ),
    "sister": (
        "My sister {name} moved to {city} for a new job.",
        "Where does my sibling reside these days?",
        {"zh": "我姐姐现在住在哪个城市？", "es": "¿Dónde vive ahora mi hermana?"},
    ),
    "job": (
        "I work as a {job} at a small firm downtown.",
        "What is my profession?",
        {"es": "¿Cuál es mi profesión?", "ar": "ما هي مهنتي؟"},
    ),
    "birthday": (
        "My birthday falls on the 14th of {month}.",
        "On what date was I born?",
        {"ar": "في أي يوم ولدت؟", "fr": "Quelle est ma date de naissance ?"},
    ),
    "car": (
        "I drive an old {color} {car}.",
        "What vehicle do I own?",
        {"fr": "Quelle voiture est-ce que je conduis ?", "zh": "我开的是什么车？"},
    ),
    "diet": (
        "I stopped eating meat and fish three years ago.",
        "Am I a vegetarian?",
        {"es": "¿Soy vegetariano?"},
    ),
    "hobby": (
        "On weekends I usually go {hobby}.",
        "What do I do for fun on Saturdays?",
        {"fr": "Que fais-je pour me détendre le samedi ?"},
    ),
    "language": (
        "I have been taking {lang} lessons twice a week.",
        "Which foreign tongue am I studying?",
        {"zh": "我在学习哪种外语？", "es": "¿Qué idioma extranjero estoy aprendiendo?"},
    ),
    "dentist": (
        "My dentist appointment is next {weekday} at 3pm.",
        "When do I have to see the tooth doctor?",
        {"ar": "متى موعدي عند طبيب الأسنان؟"},
    ),
    "instrument": (
        "I play the {instrument} in a community orchestra.",
        "Which musical instrument can I perform on?",
        {"ar": "ما الآلة الموسيقية التي أعزف عليها؟", "fr": "De quel instrument de musique est-ce que je joue ?"},
    ),
    "wifi": (
        "The wifi password is written on the back of the router.",
        "Where can I find the code for the wireless internet?",
        {"es": "¿Dónde encuentro la clave de internet inalámbrico?"},
    ),
    "coffee": (
        "I take my coffee with oat milk and no sugar.",
        "How do I like my morning brew prepared?",
        {"fr": "Comment est-ce que je prends mon café ?", "zh": "我的咖啡怎么喝？"},
    ),
    "son": (
        "My son {name} just started first grade.",
        "Which school year is my boy in?",
        {"es": "¿En qué curso está mi hijo?"},
    ),
    "trip": (
        "We are flying to {city} in {month} for our anniversary.",
        "Where are we going on holiday?",
        {"es": "¿Adónde viajamos de vacaciones?", "zh": "我们要去哪里度假？"},
    ),
    "fear": (
        "I am terrified of {fear}.",
        "What scares me the most?",
        {"zh": "我最害怕什么？", "fr": "Qu'est-ce qui me fait le plus peur ?"},
    ),
    "team": (
        "I support {team} and never miss a match.",
        "Which football club do I cheer for?",
        {"ar": "ما هو نادي كرة القدم الذي أشجعه؟"},
    ),
    "book": (
        "I am halfway through reading {book}.",
        "What novel am I currently on?",
        {"fr": "Quel livre suis-je en train de lire ?"},
    ),
    "medication": (
        "I take {med} every morning for my blood pressure.",
        "What pills am I on for hypertension?",
        {"ar": "ما الدواء الذي أتناوله لضغط الدم؟", "es": "¿Qué medicina tomo para la tensión?"},
    ),
    "flat": (
        "Our flat is on the fifth floor and the building has no elevator.",
        "How many stairs must I climb to get home?",
        {"fr": "À quel étage se trouve notre appartement ?"},
    ),
    "wife": (
        "My wife {name} is a nurse at the city hospital.",
        "What does my spouse do for a living?",
        {"es": "¿A qué se dedica mi esposa?", "zh": "我妻子是做什么工作的？"},
    ),
    "dish": (
        "My favourite dish is {dish}.",
        "Which meal do I enjoy above all others?",
        {"zh": "我最喜欢吃哪道菜？", "ar": "ما هي أكلتي المفضلة؟"},
    ),
    "gym": (
        "I lift weights at the gym every Monday and Thursday.",
        "On which days do I exercise?",
        {"fr": "Quels jours est-ce que je fais du sport ?"},
    ),
    "bank": (
        "I keep my savings at {bank}.",
        "Where is my money deposited?",
        {"es": "¿Dónde tengo guardado mi dinero?"},
    ),
    "sleep": (
        "I usually fall asleep around 1am and wake up at 9.",
        "What are my bedtime habits?",
        {"ar": "متى أنام عادة؟"},
    ),
    "garden": (
        "I grow tomatoes and basil on the balcony.",
        "What plants do I cultivate?",
        {"ar": "ما النباتات التي أزرعها؟", "fr": "Quelles plantes est-ce que je cultive ?"},
    ),
    "commute": (
        "I cycle to the office, about 25 minutes each way.",
        "How do I get to work?",
        {"es": "¿Cómo voy al trabajo?", "zh": "我怎么去上班？"},
    ),
    "film": (
        "The best film I have ever seen is {film}.",
        "What is my all-time favourite movie?",
        {"fr": "Quel est mon film préféré ?"},
    ),
    "wedding": (
        "We got married in {city} in 2015.",
        "Where did our wedding take place?",
        {"zh": "我们是在哪里结婚的？", "es": "¿Dónde fue nuestra boda?"},
    ),
    "neighbour": (
        "The neighbour's dog barks every night at 2am.",
        "What noise keeps me awake?",
        {"fr": "Quel bruit m'empêche de dormir ?"},
    ),
}


LANGUAGES = ["es", "fr", "ar", "zh"]


@dataclass(frozen=True)
class Memory:
    user: str
    key: str
    text: str


@dataclass(frozen=True)
class Query:
    user: str
    text: str
    language: str
    answer: str  # the key of the memory that answers it


def build(seed: int = 3) -> tuple[list[Memory], list[Query]]:
    rng = random.Random(seed)
    memories: list[Memory] = []
    queries: list[Query] = []
    kinds = sorted(KINDS)
    turn = 0
    for u in range(20):
        user = f"user-{u:02d}"
        chosen = rng.sample(kinds, 15)
        for kind in chosen:
            template = KINDS[kind][0]
            text = template.format(
                name=rng.choice(NAMES),
                city=rng.choice(CITIES),
                pet=rng.choice(PETS),
                food=rng.choice(FOODS),
                job=rng.choice(JOBS),
                month=rng.choice(MONTHS),
                color=rng.choice(COLORS),
                car=rng.choice(CARS),
                hobby=rng.choice(HOBBIES),
                lang=rng.choice(LANGS),
                weekday=rng.choice(WEEKDAYS),
                instrument=rng.choice(INSTRUMENTS),
                fear=rng.choice(FEARS),
                team=rng.choice(TEAMS),
                book=rng.choice(BOOKS),
                med=rng.choice(MEDS),
                dish=rng.choice(DISHES),
                bank=rng.choice(BANKS),
                film=rng.choice(FILMS),
            )
            memories.append(Memory(user, f"{user}/{kind}", text))
        asked = rng.sample(chosen, 5)
        foreign = 2 if u % 2 == 0 else 1  # 30 of the 100 queries are not in English
        for _ in range(foreign):
            want = LANGUAGES[turn % 4]
            turn += 1
            candidates = [k for k in asked if want in KINDS[k][2]] or [k for k in asked if KINDS[k][2]]
            kind = candidates[0]
            language = want if want in KINDS[kind][2] else sorted(KINDS[kind][2])[0]
            asked.remove(kind)
            queries.append(Query(user, KINDS[kind][2][language], language, f"{user}/{kind}"))
        queries.extend(Query(user, KINDS[kind][1], "en", f"{user}/{kind}") for kind in asked)
    return memories, queries


def negatives(seed: int = 5) -> list[Query]:
    """Queries about facts the user never stored (``answer`` empty), in every language of the set."""
    rng = random.Random(seed)
    memories, _ = build()
    held: dict[str, set[str]] = {}
    for memory in memories:
        held.setdefault(memory.user, set()).add(memory.key.split("/")[1])
    asked: list[Query] = []
    for user, kinds in held.items():
        for kind in rng.sample(sorted(set(KINDS) - kinds), 5):
            asked.append(Query(user, KINDS[kind][1], "en", ""))
            asked.extend(Query(user, text, language, "") for language, text in KINDS[kind][2].items())
    return asked
