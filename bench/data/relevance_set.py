# ruff: noqa: RUF001  (the Chinese queries end with a full-width question mark, as Chinese is written)
"""Labelled data for FITTING the relevance calibration, generated deterministically.

The search service ends with a small logistic regression that decides whether a hit really answers
the question. This module produces the examples that model is fitted on: personal facts stored by
users, questions that ask for them in other words (most share no content word with the stored
sentence), and questions whose right answer is: nothing.

It is a training set only. Figures are never reported on it: the retrieval benchmark's figures
come from ``paraphrase_set.py``, the held-out test set. To keep the two apart, no kind of fact,
sentence template, name or slot value of the paraphrase set is used here.

- :data:`KINDS`: 64 kinds of personal fact, each with a stored English sentence (slots filled from
  :data:`SLOTS`) and a question asking for it in each of English, Spanish, French, Arabic and Chinese.
- :data:`STORED_FOREIGN`: for about a third of the kinds, the stored sentence in Spanish or French;
  users whose home language it is store that variant instead (users store memories in their own
  language, and ask in any).
- :data:`NEAR_MISS`: for some kinds, a question about a related but different fact, which a memory
  of that kind does NOT answer (the father's trade stored, the mother's asked).

:func:`build` (seed 11) gives 60 users 12-20 facts each and asks 6 questions per user, the languages
spread evenly over the five. :func:`negatives` (seed 13) asks each user about 6 kinds they never
stored, in all five languages, and 2 near-miss questions about kinds they did store.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from string import Formatter

LANGUAGES = ("en", "es", "fr", "ar", "zh")

# Slot values, by the slot name used in the templates.
SLOTS: dict[str, list[str]] = {
    "name": ["Sasha", "Robin", "Kim", "Alex", "Noor", "Jules", "Andrea", "Charlie"],
    "woman": ["Rosa", "Nadia", "Leila", "Aiko", "Greta", "Marta"],
    "man": ["Dmitri", "Felix", "Bruno", "Hugo", "Mateo", "Anselm"],
    "surname": ["Okafor", "Lindqvist", "Moreau", "Haddad", "Brennan", "Castillo"],
    "town": ["Tartu", "Ghent", "Mendoza", "Kochi", "Bergen", "Trieste", "Valparaiso", "Aarhus"],
    "street": ["Ringstrasse", "Calle Mayor", "Rue Oberkampf", "King Street", "Via Roma"],
    "blood": ["A+", "A-", "B+", "O+", "O-", "AB+"],
    "tea": ["Darjeeling", "rooibos", "Earl Grey", "sencha", "oolong", "chamomile"],
    "phone": ["Pixel 7", "iPhone 12", "Galaxy S21", "Nokia G50", "Fairphone 4", "Xperia 10"],
    "podcast": ["Hardcore History", "Radiolab", "The Daily", "99% Invisible", "Freakonomics Radio", "Reply All"],
    "trade": ["ship's carpenter", "postman", "baker", "train driver", "schoolteacher", "welder"],
    "band": ["Oasis", "Radiohead", "Shakira", "Metallica", "Daft Punk", "ABBA"],
    "shoe": ["37", "38", "39", "42", "44", "45"],
    "dioptre": ["0.75", "1.5", "2.25", "3", "4.5"],
    "season": ["spring", "summer", "autumn", "winter"],
    "year": ["2009", "2013", "2016", "2019", "2021", "2023"],
    "month": ["January", "February", "May", "July", "August", "November"],
    "expiry": ["2026", "2027", "2028", "2029", "2031"],
    "subject": ["marine biology", "civil law", "art history", "statistics", "philosophy", "agronomy"],
    "shop": ["bakery", "hardware store", "bicycle repair shop", "flower stall", "fishmonger's"],
    "salary": ["38,000", "45,000", "52,000", "61,000", "74,000"],
    "topic": ["coral bleaching", "medieval trade routes", "protein folding", "urban heat islands", "Baroque opera"],
    "perfume": ["Chanel No. 5", "Acqua di Gio", "Terre d'Hermes", "Light Blue", "Santal 33"],
    "game": ["Catan", "Scrabble", "Ticket to Ride", "Carcassonne", "Azul", "Monopoly"],
    "painter": ["Vermeer", "Frida Kahlo", "Hokusai", "Rothko", "Turner", "Klimt"],
    "flavour": ["pistachio", "stracciatella", "salted caramel", "mango sorbet", "hazelnut"],
    "wine": ["Rioja", "Malbec", "Chablis", "Barolo", "Riesling"],
    "series": ["The Wire", "Breaking Bad", "Fleabag", "Twin Peaks", "Dark", "Succession"],
    "paper": ["The Guardian", "Le Monde", "El Pais", "Die Zeit", "The New York Times"],
    "video_game": ["Zelda", "Minecraft", "Stardew Valley", "Elden Ring", "Tetris"],
    "shade": ["teal", "mustard yellow", "terracotta", "lavender", "olive"],
    "insurer": ["Allianz", "AXA", "Zurich", "Generali", "Mapfre"],
    "rent": ["780", "950", "1,200", "1,480", "2,100"],
    "charity": ["Doctors Without Borders", "Oxfam", "the Red Cross", "WWF", "Amnesty International"],
    "airline": ["KLM", "Iberia", "Lufthansa", "Emirates", "Qantas", "Air Canada"],
    "seat": ["window seat", "aisle seat", "seat in the exit row", "seat near the front"],
    "countries": ["8", "12", "23", "41", "57"],
    "nationality": ["Canadian", "Swiss", "Mexican", "Danish", "Chilean"],
    "tattoo": ["anchor", "swallow", "compass", "lotus", "paper plane"],
    "nickname": ["Bean", "Skipper", "Pip", "Moose", "Sunny", "Biscuit"],
    "watch": ["Omega Seamaster", "Seiko 5", "Casio F-91W", "Rolex Datejust", "Swatch"],
    "time": ["2:59", "3:18", "3:42", "4:05", "4:31"],
    "restaurant": ["Le Petit Zinc", "Trattoria da Gino", "The Ivy", "Sushi Kanda", "El Faro"],
    "cocktail": ["negroni", "mojito", "whisky sour", "margarita", "pisco sour"],
    "laptop": ["ThinkPad X1", "MacBook Air", "Dell XPS 13", "Surface Laptop", "Framework 13"],
    "song": ["Bohemian Rhapsody", "Dancing Queen", "Wonderwall", "La Vie en rose", "Hallelujah"],
    "heating": ["wood stove", "heat pump", "gas boiler", "oil furnace", "pellet burner"],
    "hiding": ["the blue flowerpot", "the doormat", "a loose brick by the gate", "the stone frog on the step"],
    "bin": ["yellow", "brown", "orange", "purple", "grey"],
    "code": ["4711", "2580", "9314", "1066", "7392"],
    "organ": ["appendix", "tonsils", "gallbladder", "spleen"],
    "height": ["158", "164", "171", "179", "186", "193"],
    "joint": ["left knee", "right shoulder", "lower back", "neck", "right ankle"],
    "elo": ["1450", "1620", "1810", "1990", "2150"],
    "middle": ["Augustin", "Beatrix", "Cosimo", "Dagny", "Evander", "Ottilie"],
}

# kind: (stored English sentence, {language: question asking for it in other words})
KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "blood_type": (
        "My blood group is {blood}, according to my donor card.",
        {
            "en": "What type would I need if I had a transfusion?",
            "es": "¿Cuál es mi tipo de sangre?",
            "fr": "Quel est mon groupe sanguin ?",
            "ar": "ما هي فصيلة دمي؟",
            "zh": "我是什么血型？",
        },
    ),
    "landlord": (
        "{name} owns our building and lives on the ground floor.",
        {
            "en": "Who do I rent my home from?",
            "es": "¿Quién es mi casero?",
            "fr": "À qui est-ce que je loue mon logement ?",
            "ar": "من هو مالك البيت الذي أستأجره؟",
            "zh": "我的房东是谁？",
        },
    ),
    "tea": (
        "Every afternoon I brew a pot of {tea}.",
        {
            "en": "Which tea do I like best?",
            "es": "¿Qué té es mi preferido?",
            "fr": "Quel thé est-ce que je préfère ?",
            "ar": "ما نوع الشاي الذي أفضّله؟",
            "zh": "我最喜欢喝哪种茶？",
        },
    ),
    "childhood_town": (
        "I grew up in {town}, a small place by the river.",
        {
            "en": "Where did I spend my early years?",
            "es": "¿Dónde pasé mi infancia?",
            "fr": "Où ai-je passé mon enfance ?",
            "ar": "أين قضيت طفولتي؟",
            "zh": "我小时候是在哪里长大的？",
        },
    ),
    "phone": (
        "I'm using a {phone} that I bought secondhand.",
        {
            "en": "What mobile do I carry around?",
            "es": "¿Qué móvil tengo?",
            "fr": "Quel modèle de smartphone ai-je ?",
            "ar": "ما نوع هاتفي المحمول؟",
            "zh": "我用的是什么手机？",
        },
    ),
    "podcast": (
        "I never miss an episode of {podcast} on my walks.",
        {
            "en": "Which podcast do I follow?",
            "es": "¿Qué pódcast escucho?",
            "fr": "Quel podcast est-ce que j'écoute ?",
            "ar": "ما البودكاست الذي أستمع إليه؟",
            "zh": "我常听哪个播客？",
        },
    ),
    "father_job": (
        "My dad spent thirty years as a {trade}.",
        {
            "en": "What did my father do for a living?",
            "es": "¿En qué trabajaba mi padre?",
            "fr": "Quel était le métier de mon père ?",
            "ar": "ماذا كان يعمل والدي؟",
            "zh": "我父亲以前是做什么工作的？",
        },
    ),
    "first_concert": (
        "The first gig I ever went to was {band}, in a packed stadium.",
        {
            "en": "Which act did I see perform live before any other?",
            "es": "¿Cuál fue mi primer concierto?",
            "fr": "Quel a été mon tout premier concert ?",
            "ar": "ما أول حفل موسيقي حضرته في حياتي؟",
            "zh": "我看的第一场演唱会是谁的？",
        },
    ),
    "shoe_size": (
        "I wear a {shoe} in trainers.",
        {
            "en": "How big are my feet?",
            "es": "¿Qué número de zapato calzo?",
            "fr": "Quelle est ma pointure ?",
            "ar": "ما هو مقاس حذائي؟",
            "zh": "我穿多大码的鞋？",
        },
    ),
    "eyesight": (
        "My glasses prescription is minus {dioptre} in both eyes.",
        {
            "en": "How short-sighted am I?",
            "es": "¿Cuántas dioptrías de miopía tengo?",
            "fr": "Quelle est ma correction de vue ?",
            "ar": "ما هي درجة قصر النظر عندي؟",
            "zh": "我的近视有多少度？",
        },
    ),
    "season": (
        "I feel happiest in {season}, when the light is soft.",
        {
            "en": "Which time of year do I enjoy most?",
            "es": "¿Cuál es mi estación del año favorita?",
            "fr": "Quelle est ma saison préférée ?",
            "ar": "ما هو فصل السنة المفضل لدي؟",
            "zh": "我最喜欢哪个季节？",
        },
    ),
    "grandmother": (
        "Grandma {woman} still lives on her own in {town} at ninety-one.",
        {
            "en": "Where is my granny's home?",
            "es": "¿Dónde vive mi abuela?",
            "fr": "Où habite ma grand-mère ?",
            "ar": "أين تعيش جدتي؟",
            "zh": "我奶奶住在哪里？",
        },
    ),
    "family_doctor": (
        "Dr {surname} at the health centre round the corner looks after the whole family.",
        {
            "en": "Who is my GP?",
            "es": "¿Quién es mi médico de cabecera?",
            "fr": "Qui est mon médecin traitant ?",
            "ar": "من هو طبيب العائلة الذي أراجعه؟",
            "zh": "我的家庭医生是谁？",
        },
    ),
    "tetanus_shot": (
        "I had my last tetanus booster in {year}.",
        {
            "en": "When was I last protected against lockjaw?",
            "es": "¿Cuándo me vacuné del tétanos por última vez?",
            "fr": "Quand ai-je fait mon dernier rappel contre le tétanos ?",
            "ar": "متى أخذت آخر جرعة من لقاح الكزاز؟",
            "zh": "我上次打破伤风疫苗是什么时候？",
        },
    ),
    "passport_expiry": (
        "My passport runs out in {month} {expiry}.",
        {
            "en": "When is my travel document no longer valid?",
            "es": "¿Cuándo caduca mi pasaporte?",
            "fr": "Quand mon passeport expire-t-il ?",
            "ar": "متى تنتهي صلاحية جواز سفري؟",
            "zh": "我的护照什么时候过期？",
        },
    ),
    "degree": (
        "I hold a bachelor's in {subject}.",
        {
            "en": "What did I major in at university?",
            "es": "¿Qué carrera estudié?",
            "fr": "Qu'est-ce que j'ai étudié à la fac ?",
            "ar": "ماذا درست في الجامعة؟",
            "zh": "我大学学的是什么专业？",
        },
    ),
    "uncle": (
        "Uncle {man} runs a {shop} near the harbour.",
        {
            "en": "What kind of business does my uncle have?",
            "es": "¿Qué negocio tiene mi tío?",
            "fr": "Quel commerce tient mon oncle ?",
            "ar": "ما نوع المحل الذي يملكه عمي؟",
            "zh": "我叔叔开的是什么店？",
        },
    ),
    "best_friend": (
        "{name} and I have been inseparable since we were seven.",
        {
            "en": "Who is my oldest pal?",
            "es": "¿Quién es mi mejor amigo?",
            "fr": "Qui est mon meilleur ami ?",
            "ar": "من هو أعز أصدقائي؟",
            "zh": "我最好的朋友是谁？",
        },
    ),
    "manager": (
        "{name} is my line manager and signs off on my yearly objectives.",
        {
            "en": "Who do I report to at work?",
            "es": "¿Quién es mi jefe?",
            "fr": "Qui est mon supérieur hiérarchique ?",
            "ar": "من هو مديري المباشر في العمل؟",
            "zh": "我的直属上司是谁？",
        },
    ),
    "mother_birthplace": (
        "Mum was born in {town} and came here at twenty.",
        {
            "en": "Where is my mother originally from?",
            "es": "¿De dónde es mi madre?",
            "fr": "D'où vient ma mère ?",
            "ar": "من أين أمي في الأصل؟",
            "zh": "我母亲老家是哪里的？",
        },
    ),
    "in_laws": (
        "My in-laws spend every winter in {town}.",
        {
            "en": "Where do my spouse's parents go when it gets cold?",
            "es": "¿Dónde pasan el invierno mis suegros?",
            "fr": "Où mes beaux-parents passent-ils l'hiver ?",
            "ar": "أين يقضي أصهاري فصل الشتاء؟",
            "zh": "我配偶的父母在哪里过冬？",
        },
    ),
    "babysitter": (
        "{name} babysits for us whenever we have an evening out.",
        {
            "en": "Who minds the kids when we go out at night?",
            "es": "¿Quién cuida a los niños cuando salimos?",
            "fr": "Qui s'occupe des enfants quand nous sommes absents le soir ?",
            "ar": "من يعتني بالأطفال عندما نخرج في المساء؟",
            "zh": "我们晚上出门时谁帮忙照看孩子？",
        },
    ),
    "salary": (
        "I earn {salary} euros a year before tax.",
        {
            "en": "What is my annual income?",
            "es": "¿Cuánto cobro al año?",
            "fr": "Combien est-ce que je gagne par an ?",
            "ar": "كم دخلي السنوي؟",
            "zh": "我一年挣多少钱？",
        },
    ),
    "thesis": (
        "My doctoral thesis was on {topic}.",
        {
            "en": "What was my PhD research about?",
            "es": "¿De qué trataba mi tesis doctoral?",
            "fr": "Sur quoi portait ma thèse de doctorat ?",
            "ar": "ما موضوع أطروحة الدكتوراه الخاصة بي؟",
            "zh": "我的博士论文研究的是什么？",
        },
    ),
    "perfume": (
        "I always wear {perfume}, even at home.",
        {
            "en": "Which fragrance do I use?",
            "es": "¿Qué perfume uso?",
            "fr": "Quel parfum est-ce que je porte ?",
            "ar": "ما العطر الذي أستعمله؟",
            "zh": "我用的是什么香水？",
        },
    ),
    "board_game": (
        "Our family plays {game} every Sunday night.",
        {
            "en": "Which tabletop game do we enjoy together?",
            "es": "¿A qué juego de mesa jugamos en familia?",
            "fr": "À quel jeu de société jouons-nous ensemble ?",
            "ar": "ما لعبة الطاولة التي نلعبها معًا؟",
            "zh": "我们全家常玩什么桌游？",
        },
    ),
    "painter": (
        "I could stand in front of a {painter} canvas for hours.",
        {
            "en": "Which artist do I admire most?",
            "es": "¿Qué pintor admiro más?",
            "fr": "Quel peintre est-ce que j'admire le plus ?",
            "ar": "من هو الرسام الذي أُعجب به أكثر من غيره؟",
            "zh": "我最欣赏哪位画家？",
        },
    ),
    "ice_cream": (
        "At the gelateria I always order {flavour}.",
        {
            "en": "What is my go-to ice cream?",
            "es": "¿Qué sabor de helado pido siempre?",
            "fr": "Quel parfum de glace est-ce que je choisis toujours ?",
            "ar": "ما نكهة المثلجات التي أطلبها دائمًا؟",
            "zh": "我总是点什么口味的冰淇淋？",
        },
    ),
    "wine": (
        "With dinner I like a glass of {wine}.",
        {
            "en": "Which wine do I prefer?",
            "es": "¿Qué vino prefiero?",
            "fr": "Quel vin est-ce que je préfère ?",
            "ar": "ما النبيذ الذي أفضّله؟",
            "zh": "我喜欢喝什么葡萄酒？",
        },
    ),
    "tv_series": (
        "I have rewatched {series} from start to finish four times.",
        {
            "en": "Which television drama could I watch again and again?",
            "es": "¿Qué serie he visto más veces?",
            "fr": "Quelle série est-ce que je regarde en boucle ?",
            "ar": "ما المسلسل الذي أعيد مشاهدته مرارًا؟",
            "zh": "我反复看了好几遍的是哪部剧？",
        },
    ),
    "newspaper": (
        "I read {paper} cover to cover on Sundays.",
        {
            "en": "Which daily do I buy?",
            "es": "¿Qué periódico compro?",
            "fr": "Quel journal est-ce que je lis ?",
            "ar": "ما الصحيفة التي أقرؤها؟",
            "zh": "我看的是哪份报纸？",
        },
    ),
    "video_game": (
        "I have sunk four hundred hours into {video_game}.",
        {
            "en": "Which console title am I hooked on?",
            "es": "¿A qué videojuego estoy enganchado?",
            "fr": "À quel jeu vidéo suis-je accro ?",
            "ar": "ما لعبة الفيديو التي أدمنت عليها؟",
            "zh": "我迷上了哪款电子游戏？",
        },
    ),
    "colour": (
        "If I could, I would paint every wall {shade}.",
        {
            "en": "Which colour do I love most?",
            "es": "¿Cuál es mi color favorito?",
            "fr": "Quelle est ma couleur préférée ?",
            "ar": "ما هو لوني المفضل؟",
            "zh": "我最喜欢什么颜色？",
        },
    ),
    "tax_advisor": (
        "{name} sorts out my tax return every year.",
        {
            "en": "Who deals with the taxman for me?",
            "es": "¿Quién me hace la declaración de la renta?",
            "fr": "Qui s'occupe de ma déclaration d'impôts ?",
            "ar": "من يعدّ إقراري الضريبي؟",
            "zh": "谁帮我报税？",
        },
    ),
    "home_insurance": (
        "Our house is insured with {insurer}.",
        {
            "en": "Which company would pay out if our home burned down?",
            "es": "¿Con qué compañía tenemos el seguro del hogar?",
            "fr": "Chez quel assureur notre logement est-il assuré ?",
            "ar": "لدى أي شركة أمّنّا بيتنا؟",
            "zh": "我们家的房屋保险是哪家公司的？",
        },
    ),
    "rent": (
        "We pay {rent} euros a month for the apartment, bills included.",
        {
            "en": "How much does our place cost us?",
            "es": "¿Cuánto pagamos de alquiler?",
            "fr": "Combien payons-nous de loyer ?",
            "ar": "كم ندفع إيجارًا شهريًا؟",
            "zh": "我们每个月房租多少钱？",
        },
    ),
    "charity": (
        "Every month I donate to {charity}.",
        {
            "en": "Which cause do I support financially?",
            "es": "¿A qué organización benéfica hago donativos?",
            "fr": "À quelle association est-ce que je fais des dons ?",
            "ar": "لأي جمعية خيرية أتبرع؟",
            "zh": "我定期给哪个慈善机构捐款？",
        },
    ),
    "airline": (
        "I collect miles with {airline}.",
        {
            "en": "Which carrier's frequent flyer scheme am I in?",
            "es": "¿De qué programa de viajero frecuente soy socio?",
            "fr": "Avec quelle compagnie aérienne ai-je une carte de fidélité ?",
            "ar": "في برنامج أي شركة طيران أجمع النقاط؟",
            "zh": "我在哪家航空公司积累里程？",
        },
    ),
    "plane_seat": (
        "On long flights I always book a {seat}.",
        {
            "en": "Where do I like to sit on a plane?",
            "es": "¿Qué asiento prefiero en el avión?",
            "fr": "Quelle place est-ce que je préfère dans l'avion ?",
            "ar": "أي مقعد أفضّل في الطائرة؟",
            "zh": "坐飞机时我喜欢坐哪个位置？",
        },
    ),
    "countries_visited": (
        "So far I have set foot in {countries} countries.",
        {
            "en": "How many nations have I been to?",
            "es": "¿Cuántos países he visitado?",
            "fr": "Combien de pays ai-je visités ?",
            "ar": "كم بلدًا زرت؟",
            "zh": "我去过多少个国家？",
        },
    ),
    "citizenship": (
        "I became a {nationality} citizen after the naturalisation ceremony.",
        {
            "en": "What nationality am I?",
            "es": "¿Qué nacionalidad tengo?",
            "fr": "Quelle est ma nationalité ?",
            "ar": "ما هي جنسيتي؟",
            "zh": "我是哪国国籍？",
        },
    ),
    "tattoo": (
        "I have a small {tattoo} inked on my left ankle.",
        {
            "en": "What design is on my skin?",
            "es": "¿Qué tatuaje tengo?",
            "fr": "Quel tatouage ai-je ?",
            "ar": "ما هو الوشم الذي على جسدي؟",
            "zh": "我身上纹了什么图案？",
        },
    ),
    "nickname": (
        "Everyone at home calls me {nickname}.",
        {
            "en": "What is my family nickname?",
            "es": "¿Cómo me llaman en casa?",
            "fr": "Quel est mon surnom en famille ?",
            "ar": "ما هو لقبي في العائلة؟",
            "zh": "家里人叫我什么小名？",
        },
    ),
    "watch": (
        "Every day I wear a {watch} that I inherited.",
        {
            "en": "What timepiece is on my wrist?",
            "es": "¿Qué reloj llevo?",
            "fr": "Quelle montre est-ce que je porte ?",
            "ar": "ما الساعة التي أرتديها؟",
            "zh": "我戴的是什么手表？",
        },
    ),
    "marathon": (
        "My personal best over 42 kilometres is {time}.",
        {
            "en": "What is my fastest marathon finish?",
            "es": "¿Cuál es mi mejor marca en maratón?",
            "fr": "Quel est mon record sur marathon ?",
            "ar": "ما هو أفضل توقيت لي في الماراثون؟",
            "zh": "我跑马拉松的最好成绩是多少？",
        },
    ),
    "restaurant": (
        "For special occasions we book a table at {restaurant}.",
        {
            "en": "Where do we go out to eat when celebrating?",
            "es": "¿A qué restaurante vamos para celebrar algo?",
            "fr": "Dans quel restaurant allons-nous pour fêter un événement ?",
            "ar": "إلى أي مطعم نذهب عندما نحتفل؟",
            "zh": "我们庆祝的时候去哪家餐厅？",
        },
    ),
    "cocktail": (
        "At a bar my usual drink is a {cocktail}.",
        {
            "en": "What cocktail do I always ask for?",
            "es": "¿Qué cóctel pido siempre?",
            "fr": "Quel cocktail est-ce que je commande toujours ?",
            "ar": "ما الكوكتيل الذي أطلبه دائمًا؟",
            "zh": "我在酒吧总点什么鸡尾酒？",
        },
    ),
    "laptop": (
        "I write everything on a {laptop}.",
        {
            "en": "Which computer do I use?",
            "es": "¿Qué ordenador portátil uso?",
            "fr": "Quel ordinateur est-ce que j'utilise ?",
            "ar": "ما نوع حاسوبي المحمول؟",
            "zh": "我用的是什么笔记本电脑？",
        },
    ),
    "moved_in": (
        "We moved into this house in {year}.",
        {
            "en": "Since when have we lived at our current address?",
            "es": "¿Desde cuándo vivimos aquí?",
            "fr": "Depuis quand habitons-nous ici ?",
            "ar": "منذ متى نسكن في هذا البيت؟",
            "zh": "我们是哪一年搬进现在的房子的？",
        },
    ),
    "quit_smoking": (
        "I smoked my last cigarette on New Year's Eve {year}.",
        {
            "en": "When did I give up tobacco?",
            "es": "¿Cuándo dejé de fumar?",
            "fr": "Quand ai-je arrêté de fumer ?",
            "ar": "متى أقلعت عن التدخين؟",
            "zh": "我是什么时候戒烟的？",
        },
    ),
    "hairdresser": (
        "{name} has cut my hair at the salon on {street} for ten years.",
        {
            "en": "Who gives me a trim?",
            "es": "¿Quién me corta el pelo?",
            "fr": "Qui est mon coiffeur ?",
            "ar": "من يقص شعري؟",
            "zh": "谁给我理发？",
        },
    ),
    "lawyer": (
        "Our family solicitor is {surname}, who has an office on {street}.",
        {
            "en": "Who handles our legal matters?",
            "es": "¿Quién es nuestro abogado?",
            "fr": "Qui est notre avocat ?",
            "ar": "من هو محامي عائلتنا؟",
            "zh": "我们家的律师是谁？",
        },
    ),
    "emergency_contact": (
        "If anything happens to me, please ring my cousin {name}.",
        {
            "en": "Who should be notified in an emergency?",
            "es": "¿A quién hay que avisar en caso de emergencia?",
            "fr": "Qui faut-il prévenir en cas d'urgence ?",
            "ar": "بمن يجب الاتصال في حالة الطوارئ؟",
            "zh": "紧急情况下应该联系谁？",
        },
    ),
    "song": (
        "{song} is what I belt out in the shower.",
        {
            "en": "Which track do I always sing while washing?",
            "es": "¿Qué canción canto en la ducha?",
            "fr": "Quelle chanson est-ce que je chante sous la douche ?",
            "ar": "ما الأغنية التي أغنيها وأنا أستحم؟",
            "zh": "我洗澡时总唱哪首歌？",
        },
    ),
    "heating": (
        "Our house is warmed by a {heating}.",
        {
            "en": "What do we use to heat our home?",
            "es": "¿Qué calefacción tenemos en casa?",
            "fr": "Comment notre maison est-elle chauffée ?",
            "ar": "كيف ندفّئ بيتنا في الشتاء؟",
            "zh": "我们家用什么取暖？",
        },
    ),
    "spare_key": (
        "A spare key is hidden under {hiding}.",
        {
            "en": "How can I get in if I'm locked out?",
            "es": "¿Dónde está escondida la llave de repuesto?",
            "fr": "Où est cachée la clé de secours ?",
            "ar": "أين خبّأنا المفتاح الاحتياطي؟",
            "zh": "备用钥匙藏在哪里？",
        },
    ),
    "recycling": (
        "Glass and paper go in the {bin} container by the fence.",
        {
            "en": "Which bin takes the recycling?",
            "es": "¿En qué contenedor va el reciclaje?",
            "fr": "Dans quelle poubelle met-on le recyclage ?",
            "ar": "في أي حاوية نضع المواد القابلة لإعادة التدوير؟",
            "zh": "可回收垃圾要扔进哪个垃圾桶？",
        },
    ),
    "alarm_code": (
        "The burglar alarm code is {code}.",
        {
            "en": "How do I switch off the security system?",
            "es": "¿Cuál es la clave de la alarma?",
            "fr": "Comment désactiver le système de sécurité de la maison ?",
            "ar": "ما هو رمز جهاز الإنذار؟",
            "zh": "防盗警报器的密码是多少？",
        },
    ),
    "plumber": (
        "{name} is the plumber we trust; the number is on the fridge.",
        {
            "en": "Who do I ring when a tap drips?",
            "es": "¿A qué fontanero llamamos?",
            "fr": "Quel plombier appelons-nous ?",
            "ar": "بأي سبّاك نتصل؟",
            "zh": "水管坏了我们找谁修？",
        },
    ),
    "surgery": (
        "I had my {organ} removed when I was nineteen.",
        {
            "en": "What operation have I had?",
            "es": "¿De qué me han operado?",
            "fr": "De quoi ai-je été opéré ?",
            "ar": "ما العملية الجراحية التي أجريتها؟",
            "zh": "我做过什么手术？",
        },
    ),
    "height": (
        "I measure {height} centimetres in my socks.",
        {
            "en": "How tall am I?",
            "es": "¿Cuánto mido?",
            "fr": "Combien est-ce que je mesure ?",
            "ar": "كم طولي؟",
            "zh": "我身高多少？",
        },
    ),
    "physio": (
        "I see a physiotherapist every fortnight for my {joint}.",
        {
            "en": "Which part of my body is being treated?",
            "es": "¿Qué parte del cuerpo me están tratando en rehabilitación?",
            "fr": "Pour quelle partie du corps suis-je en rééducation ?",
            "ar": "أي جزء من جسمي أتلقى له العلاج الطبيعي؟",
            "zh": "我在做哪个部位的康复治疗？",
        },
    ),
    "chess_rating": (
        "My online chess rating hovers around {elo}.",
        {
            "en": "What is my Elo?",
            "es": "¿Cuál es mi puntuación Elo en ajedrez?",
            "fr": "Quel est mon classement Elo aux échecs ?",
            "ar": "ما هو تصنيفي في الشطرنج؟",
            "zh": "我的国际象棋等级分是多少？",
        },
    ),
    "middle_name": (
        "My second given name is {middle}, after a great-aunt.",
        {
            "en": "What is my middle name?",
            "es": "¿Cuál es mi segundo nombre?",
            "fr": "Quel est mon deuxième prénom ?",
            "ar": "ما هو اسمي الأوسط؟",
            "zh": "我的中间名是什么？",
        },
    ),
}

# kind: (language, stored sentence in that language). Same slots as the English sentence; users whose
# home language this is store it instead of the English one.
STORED_FOREIGN: dict[str, tuple[str, str]] = {
    "blood_type": ("es", "Mi grupo sanguíneo es {blood}, según mi carné de donante."),
    "landlord": ("fr", "{name} est propriétaire de notre immeuble et habite au rez-de-chaussée."),
    "childhood_town": ("es", "Crecí en {town}, un sitio pequeño junto al río."),
    "phone": ("fr", "J'utilise un {phone} acheté d'occasion."),
    "podcast": ("es", "Nunca me pierdo un episodio de {podcast} cuando salgo a caminar."),
    "first_concert": ("es", "El primer concierto de mi vida fue de {band}, en un estadio lleno."),
    "shoe_size": ("fr", "Je chausse du {shoe} en baskets."),
    "grandmother": ("fr", "Mamie {woman} vit toujours seule à {town}, à quatre-vingt-onze ans."),
    "family_doctor": ("es", "La doctora {surname}, del centro de salud de la esquina, atiende a toda la familia."),
    "best_friend": ("es", "{name} y yo somos inseparables desde los siete años."),
    "manager": ("fr", "Au bureau, c'est {name} qui valide mes congés et mes objectifs annuels."),
    "babysitter": ("fr", "C'est {name} qui garde les petits quand on sort le soir."),
    "board_game": ("fr", "Le dimanche soir, toute la famille joue à {game}."),
    "painter": ("es", "Podría pasar horas delante de un cuadro de {painter}."),
    "tv_series": ("fr", "J'ai revu {series} en entier quatre fois."),
    "home_insurance": ("es", "Nuestra casa está asegurada con {insurer}."),
    "airline": ("es", "Acumulo millas con {airline}."),
    "countries_visited": ("fr", "Jusqu'ici, j'ai mis les pieds dans {countries} pays."),
    "marathon": ("es", "Mi récord personal en los 42 kilómetros es {time}."),
    "moved_in": ("fr", "Nous avons emménagé dans cette maison en {year}."),
    "quit_smoking": ("es", "Fumé mi último cigarrillo en la Nochevieja de {year}."),
    "alarm_code": ("fr", "Le code de l'alarme antivol est {code}."),
}

# kind: {language: question about a related but DIFFERENT fact}, which a memory of that kind does not
# answer. None of these facts is itself a kind, so no memory in the set answers them.
NEAR_MISS: dict[str, dict[str, str]] = {
    "father_job": {
        "en": "What was my mother's profession?",
        "es": "¿En qué trabajaba mi madre?",
        "fr": "Quel était le métier de ma mère ?",
        "ar": "ماذا كانت تعمل والدتي؟",
        "zh": "我母亲以前是做什么工作的？",
    },
    "mother_birthplace": {
        "en": "Where was my father born?",
        "es": "¿Dónde nació mi padre?",
        "fr": "Où est né mon père ?",
        "ar": "أين ولد والدي؟",
        "zh": "我父亲是在哪里出生的？",
    },
    "blood_type": {
        "en": "What was my cholesterol reading?",
        "es": "¿Qué nivel de colesterol tengo?",
        "fr": "Quel est mon taux de cholestérol ?",
        "ar": "ما هو مستوى الكوليسترول عندي؟",
        "zh": "我的胆固醇水平是多少？",
    },
    "childhood_town": {
        "en": "Where did my parents first meet?",
        "es": "¿Dónde se conocieron mis padres?",
        "fr": "Où mes parents se sont-ils rencontrés ?",
        "ar": "أين تعرّف والداي على بعضهما؟",
        "zh": "我父母是在哪里认识的？",
    },
    "phone": {
        "en": "What is my mobile number?",
        "es": "¿Cuál es mi número de móvil?",
        "fr": "Quel est mon numéro de portable ?",
        "ar": "ما هو رقم هاتفي المحمول؟",
        "zh": "我的手机号码是多少？",
    },
    "laptop": {
        "en": "What printer do I have at home?",
        "es": "¿Qué impresora tengo en casa?",
        "fr": "Quelle imprimante ai-je à la maison ?",
        "ar": "ما نوع الطابعة التي عندي في البيت؟",
        "zh": "我家里用的是什么打印机？",
    },
    "first_concert": {
        "en": "What was the last gig I went to?",
        "es": "¿Cuál fue el último concierto al que fui?",
        "fr": "Quel est le dernier concert auquel je suis allé ?",
        "ar": "ما هو آخر حفل موسيقي حضرته؟",
        "zh": "我最近一次去看的是谁的演唱会？",
    },
    "shoe_size": {
        "en": "What size shirt do I wear?",
        "es": "¿Qué talla de camisa uso?",
        "fr": "Quelle taille de chemise est-ce que je porte ?",
        "ar": "ما مقاس قميصي؟",
        "zh": "我穿多大号的衬衫？",
    },
    "family_doctor": {
        "en": "Which skin specialist do I see?",
        "es": "¿Quién es mi dermatólogo?",
        "fr": "Qui est mon dermatologue ?",
        "ar": "من هو طبيب الجلدية الذي أراجعه؟",
        "zh": "我看的皮肤科医生是谁？",
    },
    "tetanus_shot": {
        "en": "When did I last have a flu jab?",
        "es": "¿Cuándo me puse la vacuna de la gripe por última vez?",
        "fr": "Quand ai-je été vacciné contre la grippe pour la dernière fois ?",
        "ar": "متى أخذت لقاح الإنفلونزا آخر مرة؟",
        "zh": "我上次打流感疫苗是什么时候？",
    },
    "passport_expiry": {
        "en": "When does my identity card run out?",
        "es": "¿Cuándo caduca mi documento de identidad?",
        "fr": "Quand expire ma carte d'identité ?",
        "ar": "متى تنتهي صلاحية بطاقة هويتي؟",
        "zh": "我的身份证什么时候到期？",
    },
    "degree": {
        "en": "Which high school did I attend?",
        "es": "¿A qué instituto fui?",
        "fr": "Dans quel lycée suis-je allé ?",
        "ar": "في أي مدرسة ثانوية درست؟",
        "zh": "我高中是在哪里读的？",
    },
    "thesis": {
        "en": "What was my master's dissertation on?",
        "es": "¿Sobre qué fue mi trabajo de fin de máster?",
        "fr": "Sur quoi portait mon mémoire de master ?",
        "ar": "ما موضوع رسالة الماجستير الخاصة بي؟",
        "zh": "我的硕士论文是关于什么的？",
    },
    "uncle": {
        "en": "What does my aunt do for a living?",
        "es": "¿A qué se dedica mi tía?",
        "fr": "Que fait ma tante dans la vie ?",
        "ar": "ماذا تعمل عمتي؟",
        "zh": "我姑姑是做什么工作的？",
    },
    "grandmother": {
        "en": "How old is my grandfather?",
        "es": "¿Cuántos años tiene mi abuelo?",
        "fr": "Quel âge a mon grand-père ?",
        "ar": "كم عمر جدي؟",
        "zh": "我爷爷多大年纪了？",
    },
    "best_friend": {
        "en": "Who was my first love?",
        "es": "¿Quién fue mi primer amor?",
        "fr": "Qui a été mon premier amour ?",
        "ar": "من كان حبي الأول؟",
        "zh": "我的初恋是谁？",
    },
    "manager": {
        "en": "Who runs the whole company I work for?",
        "es": "¿Quién es el director general de mi empresa?",
        "fr": "Qui dirige l'entreprise où je travaille ?",
        "ar": "من هو المدير التنفيذي للشركة التي أعمل فيها؟",
        "zh": "我们公司的总裁是谁？",
    },
    "in_laws": {
        "en": "Where do my parents live?",
        "es": "¿Dónde viven mis padres?",
        "fr": "Où habitent mes parents ?",
        "ar": "أين يعيش والداي؟",
        "zh": "我父母住在哪里？",
    },
    "babysitter": {
        "en": "Who is my children's teacher?",
        "es": "¿Quién es el maestro de mis hijos?",
        "fr": "Qui est l'enseignant de mes enfants ?",
        "ar": "من هو معلم أطفالي؟",
        "zh": "我孩子的老师是谁？",
    },
    "salary": {
        "en": "How much does my partner earn?",
        "es": "¿Cuánto gana mi pareja?",
        "fr": "Combien gagne mon conjoint ?",
        "ar": "كم يكسب شريك حياتي؟",
        "zh": "我的伴侣挣多少钱？",
    },
    "rent": {
        "en": "How big was the deposit on our apartment?",
        "es": "¿Cuánto pagamos de fianza por el piso?",
        "fr": "Combien avons-nous versé de caution pour l'appartement ?",
        "ar": "كم دفعنا تأمينًا للشقة؟",
        "zh": "我们租房交了多少押金？",
    },
    "landlord": {
        "en": "Who is the caretaker of our building?",
        "es": "¿Quién es el portero de nuestro edificio?",
        "fr": "Qui est le gardien de notre immeuble ?",
        "ar": "من هو حارس عمارتنا؟",
        "zh": "我们楼的门卫是谁？",
    },
    "home_insurance": {
        "en": "Which company provides my health cover?",
        "es": "¿Con qué compañía tengo el seguro médico?",
        "fr": "Quelle est ma mutuelle santé ?",
        "ar": "ما هي شركة تأميني الصحي؟",
        "zh": "我的医疗保险是哪家公司的？",
    },
    "airline": {
        "en": "Which hotel loyalty programme am I in?",
        "es": "¿En qué programa de fidelidad de hoteles estoy inscrito?",
        "fr": "À quel programme de fidélité hôtelier suis-je inscrit ?",
        "ar": "في أي برنامج ولاء فندقي أنا مسجل؟",
        "zh": "我是哪家连锁酒店的会员？",
    },
    "plane_seat": {
        "en": "Where do I like to sit on the train?",
        "es": "¿Dónde me gusta sentarme en el tren?",
        "fr": "Où est-ce que j'aime m'asseoir dans le train ?",
        "ar": "أين أحب أن أجلس في القطار؟",
        "zh": "坐火车时我喜欢坐哪里？",
    },
    "wine": {
        "en": "Which beer do I like?",
        "es": "¿Qué cerveza me gusta?",
        "fr": "Quelle bière est-ce que j'aime ?",
        "ar": "ما نوع البيرة الذي أحبه؟",
        "zh": "我喜欢喝什么啤酒？",
    },
    "tv_series": {
        "en": "Which TV show did I stop watching halfway?",
        "es": "¿Qué serie dejé a medias?",
        "fr": "Quelle série ai-je abandonnée en cours de route ?",
        "ar": "أي مسلسل توقفت عن مشاهدته في منتصفه؟",
        "zh": "我哪部剧看到一半就弃了？",
    },
    "newspaper": {
        "en": "Which magazine do I subscribe to?",
        "es": "¿A qué revista estoy suscrito?",
        "fr": "À quel magazine suis-je abonné ?",
        "ar": "في أي مجلة أنا مشترك؟",
        "zh": "我订阅了哪本杂志？",
    },
    "painter": {
        "en": "Which sculptor do I admire?",
        "es": "¿Qué escultor admiro?",
        "fr": "Quel sculpteur est-ce que j'admire ?",
        "ar": "أي نحّات أُعجب به؟",
        "zh": "我欣赏哪位雕塑家？",
    },
    "podcast": {
        "en": "Which radio station do I usually put on?",
        "es": "¿Qué emisora de radio escucho?",
        "fr": "Quelle station de radio est-ce que j'écoute ?",
        "ar": "ما محطة الراديو التي أستمع إليها؟",
        "zh": "我平时听哪个电台？",
    },
    "hairdresser": {
        "en": "Who does my nails?",
        "es": "¿Quién me hace la manicura?",
        "fr": "Qui me fait les ongles ?",
        "ar": "من يعتني بأظافري؟",
        "zh": "谁给我做美甲？",
    },
    "lawyer": {
        "en": "Who is our notary?",
        "es": "¿Quién es nuestro notario?",
        "fr": "Qui est notre notaire ?",
        "ar": "من هو كاتب العدل الذي نتعامل معه؟",
        "zh": "我们家的公证人是谁？",
    },
    "quit_smoking": {
        "en": "When did I stop drinking alcohol?",
        "es": "¿Cuándo dejé el alcohol?",
        "fr": "Quand ai-je arrêté l'alcool ?",
        "ar": "متى توقفت عن شرب الكحول؟",
        "zh": "我是什么时候戒酒的？",
    },
    "moved_in": {
        "en": "When does our lease end?",
        "es": "¿Cuándo termina nuestro contrato de alquiler?",
        "fr": "Quand se termine notre bail ?",
        "ar": "متى ينتهي عقد إيجارنا؟",
        "zh": "我们的租约什么时候到期？",
    },
    "marathon": {
        "en": "What is my best half-marathon time?",
        "es": "¿Cuál es mi mejor marca en media maratón?",
        "fr": "Quel est mon record sur semi-marathon ?",
        "ar": "ما هو أفضل توقيت لي في نصف الماراثون؟",
        "zh": "我半程马拉松的最好成绩是多少？",
    },
    "height": {
        "en": "How much do I weigh?",
        "es": "¿Cuánto peso?",
        "fr": "Combien est-ce que je pèse ?",
        "ar": "كم وزني؟",
        "zh": "我体重多少？",
    },
    "alarm_code": {
        "en": "What is the code for the building's front door?",
        "es": "¿Cuál es el código del portal?",
        "fr": "Quel est le digicode de l'immeuble ?",
        "ar": "ما هو رمز باب العمارة الرئيسي؟",
        "zh": "楼下大门的密码是多少？",
    },
    "spare_key": {
        "en": "Where is the key to the letterbox?",
        "es": "¿Dónde está la llave del buzón?",
        "fr": "Où est la clé de la boîte aux lettres ?",
        "ar": "أين مفتاح صندوق البريد؟",
        "zh": "信箱钥匙在哪里？",
    },
    "surgery": {
        "en": "Which bone did I fracture?",
        "es": "¿Qué hueso me he roto?",
        "fr": "Quel os me suis-je cassé ?",
        "ar": "أي عظمة كُسرت لدي؟",
        "zh": "我哪块骨头骨折过？",
    },
    "nickname": {
        "en": "What did my classmates call me at school?",
        "es": "¿Qué mote me pusieron en el colegio?",
        "fr": "Quel surnom avais-je à l'école ?",
        "ar": "بماذا كان يلقبني زملائي في المدرسة؟",
        "zh": "我上学时同学给我起的外号是什么？",
    },
}


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
    answer: str  # the key of the memory that answers it; "" when nothing does


def _fields(template: str) -> list[str]:
    """The slot names of a template, in order, each once."""
    return list(dict.fromkeys(field for _, field, _, _ in Formatter().parse(template) if field))


def build(seed: int = 11) -> tuple[list[Memory], list[Query]]:
    """60 users with 12-20 facts each, and 6 questions per user (360), 72 in each language."""
    rng = random.Random(seed)
    memories: list[Memory] = []
    queries: list[Query] = []
    kinds = sorted(KINDS)
    turn = 0
    for u in range(60):
        user = f"fit-{u:02d}"
        home = ("en", "es", "fr")[u % 3]  # a third of the users store facts in Spanish, a third in French
        chosen = rng.sample(kinds, rng.randint(12, 20))
        for kind in chosen:
            template = KINDS[kind][0]
            values = {slot: rng.choice(SLOTS[slot]) for slot in _fields(template)}
            if kind in STORED_FOREIGN and STORED_FOREIGN[kind][0] == home:
                template = STORED_FOREIGN[kind][1]
            memories.append(Memory(user, f"{user}/{kind}", template.format(**values)))
        for kind in rng.sample(chosen, 6):
            language = LANGUAGES[turn % len(LANGUAGES)]
            turn += 1
            queries.append(Query(user, KINDS[kind][1][language], language, f"{user}/{kind}"))
    return memories, queries


def negatives(seed: int = 13) -> list[Query]:
    """Questions nothing answers (``answer`` empty): per user, 6 kinds never stored asked in all five
    languages, and 2 near misses about kinds the user did store, one language each, in turn."""
    rng = random.Random(seed)
    memories, _ = build()
    held: dict[str, set[str]] = {}
    for memory in memories:
        held.setdefault(memory.user, set()).add(memory.key.split("/")[1])
    asked: list[Query] = []
    turn = 0
    for user, kinds in held.items():
        for kind in rng.sample(sorted(set(KINDS) - kinds), 6):
            asked.extend(Query(user, KINDS[kind][1][language], language, "") for language in LANGUAGES)
        near = sorted(kinds & set(NEAR_MISS))
        for kind in rng.sample(near, min(2, len(near))):
            language = LANGUAGES[turn % len(LANGUAGES)]
            turn += 1
            asked.append(Query(user, NEAR_MISS[kind][language], language, ""))
    return asked
