# ruff: noqa: RUF001  (Chinese and Japanese questions end with full-width question marks)
"""A hand-written relevance set, kept apart from the fit: no program generated it, and nothing is fitted on it.

Eight people, each telling six facts in their own language (English, Spanish, French, German, Chinese,
Japanese, Korean, Arabic, Russian; two of them mixing languages), asked by hand in their words, some in
another language than the fact, and asked as many things they never told. Unlike the fit set
(bench/data/relevance_set.py: templates filled by a program, in five languages) and the paraphrase set
(templates too), the sentences are irregular, short and long, and some questions share no word with
their answer. ``make bench ONLY=search`` reports on it what the relevance threshold keeps and rejects.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    answer: str  # the key of the memory that answers it; "" for a question about nothing stored


PEOPLE: dict[str, dict[str, str]] = {
    "ruth": {
        "dog": "Our old greyhound Biscuit sleeps on the sofa all afternoon.",
        "job": "I've been teaching chemistry at the county high school since 2015.",
        "allergy": "Penicillin gives me hives, so doctors have to prescribe something else.",
        "car": "Finally sold the rusty van and bought a second-hand electric hatchback.",
        "sister": "My sister Naomi moved to Glasgow for her PhD.",
        "holiday": "We're going to Crete for two weeks in August.",
    },
    "diego": {
        "work": "Trabajo de enfermero en el turno de noche del hospital.",
        "band": "Toco el bajo en una banda de rock los sábados.",
        "food": "No como carne desde hace tres años.",
        "home": "Vivo en un piso pequeño cerca del puerto de Valencia.",
        "son": "Mi hijo Mateo empieza la universidad en septiembre.",
        "sport": "Los domingos salgo en bici por la montaña.",
    },
    "claire": {
        "garden": "J'ai planté des tomates et du basilic sur mon balcon.",
        "job": "Je suis traductrice indépendante, surtout des contrats.",
        "cat": "Mon chat Pompon a peur de l'aspirateur.",
        "birthday": "Mon anniversaire tombe le 14 février, le même jour que la Saint-Valentin.",
        "car": "Je n'ai pas de voiture, je prends le tram partout.",
        "wedding": "Nous nous sommes mariés à Lyon il y a dix ans.",
    },
    "jonas": {
        "work": "Ich arbeite als Elektriker bei den Stadtwerken.",
        "hobby": "Am Wochenende baue ich Modelleisenbahnen.",
        "health": "Ich habe seit meiner Kindheit Asthma.",
        "daughter": "Meine Tochter Lea lernt gerade Geige.",
        "move": "Nächstes Jahr ziehen wir nach Hamburg.",
        "coffee": "Morgens trinke ich nur schwarzen Tee, nie Kaffee.",
    },
    "mei": {
        "job": "我在一家银行做程序员，主要写后端代码。",
        "pet": "我养了两只猫，一只叫小白，一只叫煤球。",
        "food": "我对海鲜过敏，吃虾会起疹子。",
        "home": "我们去年从北京搬到了成都。",
        "hobby": "周末我喜欢去爬山。",
        "ml": "我最近在学习机器学习。",
    },
    "kenta": {
        "job": "私は大阪の小さな会社でデザイナーをしています。",
        "pet": "うちの柴犬はハナという名前です。",
        "hobby": "週末はよく釣りに行きます。",
        "python": "私はPythonでデータ分析をしています。",
        "family": "妻と二人の娘と暮らしています。",
        "food": "辛い食べ物が苦手です。",
    },
    "layla": {
        "job": "أعمل مهندسة معمارية في عمّان.",
        "brother": "أخي يوسف يدرس الطب في القاهرة.",
        "hobby": "أحب الرسم بالألوان المائية في المساء.",
        "diet": "أنا نباتية منذ خمس سنوات.",
        "travel": "سأسافر إلى إسطنبول في الربيع.",
        "korean": "제 한국어 선생님은 서울에서 왔어요.",
    },
    "olga": {
        "job": "Я работаю бухгалтером в строительной компании.",
        "son": "Мой сын Артём играет в хоккей.",
        "dacha": "Летом мы живём на даче под Тверью.",
        "english": "I'm taking evening English classes twice a week.",
        "allergy": "У меня аллергия на кошек.",
        "car": "Мы недавно купили подержанную «Ладу».",
    },
}

QUESTIONS: list[tuple[str, str, str, str]] = [
    # (user, question, language, key of the fact that answers it)
    ("ruth", "what kind of dog do we have?", "en", "dog"),
    ("ruth", "Which subject do I teach?", "en", "job"),
    ("ruth", "Is there any medicine I can't take?", "en", "allergy"),
    ("ruth", "what car do I drive now", "en", "car"),
    ("ruth", "¿Dónde vive mi hermana?", "es", "sister"),
    ("ruth", "where are we going this summer", "en", "holiday"),
    ("diego", "¿En qué trabajo?", "es", "work"),
    ("diego", "¿Qué instrumento toco?", "es", "band"),
    ("diego", "Am I vegetarian?", "en", "food"),
    ("diego", "¿Cuándo empieza Mateo sus estudios?", "es", "son"),
    ("diego", "¿Qué hago los fines de semana para hacer ejercicio?", "es", "sport"),
    ("claire", "Qu'est-ce que je fais pousser chez moi ?", "fr", "garden"),
    ("claire", "Quel est mon métier ?", "fr", "job"),
    ("claire", "De quoi mon chat a-t-il peur ?", "fr", "cat"),
    ("claire", "When is my birthday?", "en", "birthday"),
    ("claire", "Comment je me déplace en ville ?", "fr", "car"),
    ("jonas", "Was ist mein Beruf?", "de", "work"),
    ("jonas", "Welches Hobby habe ich?", "de", "hobby"),
    ("jonas", "Do I have any health problems?", "en", "health"),
    ("jonas", "Welches Instrument spielt meine Tochter?", "de", "daughter"),
    ("jonas", "Wohin ziehen wir um?", "de", "move"),
    ("mei", "我做什么工作？", "zh", "job"),
    ("mei", "我的猫叫什么名字？", "zh", "pet"),
    ("mei", "我不能吃什么？", "zh", "food"),
    ("mei", "我现在住在哪个城市？", "zh", "home"),
    ("mei", "What am I studying lately?", "en", "ml"),
    ("kenta", "私の仕事は何ですか？", "ja", "job"),
    ("kenta", "犬の名前は？", "ja", "pet"),
    ("kenta", "週末は何をしていますか？", "ja", "hobby"),
    ("kenta", "Which programming language do I use?", "en", "python"),
    ("kenta", "家族は何人ですか？", "ja", "family"),
    ("layla", "ما هي مهنتي؟", "ar", "job"),
    ("layla", "أين يدرس أخي؟", "ar", "brother"),
    ("layla", "What do I paint with?", "en", "hobby"),
    ("layla", "هل آكل اللحم؟", "ar", "diet"),
    ("layla", "한국어 선생님은 어디 출신이에요?", "ko", "korean"),
    ("olga", "Кем я работаю?", "ru", "job"),
    ("olga", "Каким спортом занимается мой сын?", "ru", "son"),
    ("olga", "Где мы проводим лето?", "ru", "dacha"),
    ("olga", "На что у меня аллергия?", "ru", "allergy"),
]

NEVER_STORED: list[tuple[str, str, str]] = [
    # (user, question about something the user never told, language)
    ("ruth", "What is my husband's name?", "en"),
    ("ruth", "which football team do I support", "en"),
    ("ruth", "¿Cuál es mi número de teléfono?", "es"),
    ("ruth", "Java", "en"),
    ("diego", "¿Cómo se llama mi perro?", "es"),
    ("diego", "¿Qué idiomas hablo?", "es"),
    ("diego", "What is my blood type?", "en"),
    ("claire", "Quelle est ma couleur préférée ?", "fr"),
    ("claire", "Combien de frères ai-je ?", "fr"),
    ("claire", "Where did I go to school?", "en"),
    ("jonas", "Wie heißt meine Frau?", "de"),
    ("jonas", "Welche Automarke fahre ich?", "de"),
    ("jonas", "thon", "en"),
    ("mei", "天气预报", "zh"),
    ("mei", "我的生日是哪天？", "zh"),
    ("mei", "我开什么车？", "zh"),
    ("mei", "Do I have any brothers?", "en"),
    ("kenta", "天気", "ja"),
    ("kenta", "誕生日はいつですか？", "ja"),
    ("kenta", "Java", "en"),
    ("kenta", "好きな映画は何ですか？", "ja"),
    ("layla", "الطقس", "ar"),
    ("layla", "ما اسم زوجي؟", "ar"),
    ("layla", "Which car do I drive?", "en"),
    ("layla", "좋아하는 음식이 뭐예요?", "ko"),
    ("olga", "Как зовут мою дочь?", "ru"),
    ("olga", "Какая у меня любимая книга?", "ru"),
    ("olga", "What is my favourite film?", "en"),
]


def build() -> tuple[list[Memory], list[Query]]:
    memories = [Memory(user, key, text) for user, facts in PEOPLE.items() for key, text in facts.items()]
    queries = [Query(user, text, language, f"{user}/{key}") for user, text, language, key in QUESTIONS]
    return [Memory(m.user, f"{m.user}/{m.key}", m.text) for m in memories], queries


def negatives() -> list[Query]:
    return [Query(user, text, language, "") for user, text, language in NEVER_STORED]
