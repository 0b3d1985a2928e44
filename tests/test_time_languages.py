"""Time expressions in Chinese, Japanese, Spanish, Hindi, French, German, Italian and
Portuguese (``graphmem._time``).

English readings are tested in ``test_time.py`` (unchanged by these languages); here every
other form the parser reads, what it must not read as a time, and one search per language
through the public API on every backend.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem import Content, MemoryEntry, MemoryService, SearchRequest
from graphmem._time import mentioned_ranges, query_time

SAID = datetime(2023, 6, 3, 13, 56, tzinfo=UTC)  # a Saturday
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday


def refs(text: str, said: datetime = SAID) -> list[str]:
    return [r.iso() for r in mentioned_ranges(text, said)]


def asked(query: str, as_of: datetime | None = NOW) -> tuple[list[str], list[tuple[int, int, int]], list[str]]:
    """The query's absolute ranges, its yearless (month, first, last) days and the text of its spans."""
    when = query_time(query, as_of)
    if when is None:
        return [], [], []
    return [r.iso() for r in when.ranges], list(when.yearless), [query[a:b] for a, b in when.spans]


# ---------------------------------------------------------------------------- Chinese and Japanese


@pytest.mark.parametrize(
    ("query", "ranges", "yearless"),
    [
        ("2023年5月8日李娜报名了什么课？", ["2023-05-08/2023-05-08"], []),
        ("2023年5月8日に美咲は何を買いましたか？", ["2023-05-08/2023-05-08"], []),
        ("2023年5月8号", ["2023-05-08/2023-05-08"], []),
        ("2023 年 5 月 8 日", ["2023-05-08/2023-05-08"], []),
        ("２０２３年５月８日", ["2023-05-08/2023-05-08"], []),  # full-width digits
        ("二〇二三年五月八日", ["2023-05-08/2023-05-08"], []),
        ("二〇二三年十二月三十一日", ["2023-12-31/2023-12-31"], []),
        ("2023年6月に美咲はどこへ旅行しましたか？", ["2023-06-01/2023-06-30"], []),
        ("2023年你去了哪里", ["2023-01-01/2023-12-31"], []),
        ("5月8日に何をした", [], [(5, 8, 8)]),
        ("五月八号", [], [(5, 8, 8)]),
        ("5月に何をした", [], [(5, 1, 31)]),
        ("十二月", [], [(12, 1, 31)]),
    ],
)
def test_chinese_and_japanese_dates_in_a_query(query: str, ranges: list[str], yearless: list[tuple[int, int, int]]) -> None:
    got_ranges, got_yearless, _ = asked(query)
    assert (got_ranges, got_yearless) == (ranges, yearless)


def test_a_chinese_date_span_covers_only_the_date() -> None:
    assert asked("2023年5月8日李娜报名了什么课？")[2] == ["2023年5月8日"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("昨天我去了医院", ["2023-06-02/2023-06-02"]),
        ("昨日、初めて弾いた", ["2023-06-02/2023-06-02"]),
        ("前天买的", ["2023-06-01/2023-06-01"]),
        ("一昨日は雨だった", ["2023-06-01/2023-06-01"]),
        ("今天很热", ["2023-06-03/2023-06-03"]),
        ("今日は休み", ["2023-06-03/2023-06-03"]),
        ("明天见", ["2023-06-04/2023-06-04"]),
        ("明日行く", ["2023-06-04/2023-06-04"]),
        ("上周我们去爬山", ["2023-05-22/2023-05-28"]),
        ("上个星期", ["2023-05-22/2023-05-28"]),
        ("先週から習い始めた", ["2023-05-22/2023-05-28"]),
        ("上周末去了海边", ["2023-05-27/2023-05-28"]),
        ("先週末、福岡に行った", ["2023-05-27/2023-05-28"]),
        ("上个月换了工作", ["2023-05-01/2023-05-31"]),
        ("先月引っ越した", ["2023-05-01/2023-05-31"]),
        ("下个月结婚", ["2023-07-01/2023-07-31"]),
        ("来月行く", ["2023-07-01/2023-07-31"]),
        ("去年去过", ["2022-01-01/2022-12-31"]),
        ("昨年の話", ["2022-01-01/2022-12-31"]),
        ("今年は豊作", ["2023-01-01/2023-12-31"]),
        ("明年再去", ["2024-01-01/2024-12-31"]),
        ("来年入学する", ["2024-01-01/2024-12-31"]),
        ("三年前に来た", ["2020-01-01/2020-12-31"]),
        ("3年前", ["2020-01-01/2020-12-31"]),
        ("两周前", ["2023-05-20/2023-05-26"]),
        ("2週間前", ["2023-05-20/2023-05-26"]),
        ("3ヶ月前", ["2023-03-01/2023-03-31"]),
        ("五天前", ["2023-05-29/2023-05-29"]),
        # A weekday of a calendar week: 上周六 is last week's Saturday.
        ("我上周六去了海边", ["2023-05-27/2023-05-27"]),
        ("下个星期一开始", ["2023-06-05/2023-06-05"]),
        ("先週の土曜日に会った", ["2023-05-27/2023-05-27"]),
        ("今週の金曜日", ["2023-06-02/2023-06-02"]),
        ("去年5月", ["2022-05-01/2022-05-31"]),
        ("今年の3月", ["2023-03-01/2023-03-31"]),
        ("5月8日に会った", ["2023-05-08/2023-05-08"]),  # the nearest 8 May to the day said
        ("5月 8日 に", ["2023-05-08/2023-05-08"]),
        ("十二月に", ["2022-12-01/2022-12-31"]),
    ],
)
def test_chinese_and_japanese_times_in_an_entry(text: str, expected: list[str]) -> None:
    assert refs(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "以前天气很好",  # 以前 + 天气, not 前天
        "他很聪明天才",  # 聪明 + 天才, not 明天
        "三个月的课程",  # a duration: three months
        "5か月かかった",
        "一个月",
        "月曜日に会おう",  # Monday
        "正月",
        "每月",
        "3年間住んだ",
        "我们学了三年",
        "東京タワー",
        "明日香と会った",  # Asuka, a name
        "",
    ],
)
def test_chinese_and_japanese_non_times(text: str) -> None:
    assert refs(text) == []
    assert query_time(text, NOW) is None


def test_chinese_relative_times_in_a_query_read_against_as_of() -> None:
    assert asked("上周我做了什么")[0] == ["2026-11-23/2026-11-29"]
    assert asked("去年你去了哪里")[0] == ["2025-01-01/2025-12-31"]
    assert asked("昨日何を食べた", None) == ([], [], [])  # relative: needs as_of


# ---------------------------------------------------------------------------- Spanish


@pytest.mark.parametrize(
    ("query", "ranges", "yearless", "span"),
    [
        ("¿Qué hizo Joaquín el 3 de mayo de 2023?", ["2023-05-03/2023-05-03"], [], "3 de mayo de 2023"),
        ("¿Qué hizo el 3 de mayo del 2023?", ["2023-05-03/2023-05-03"], [], "3 de mayo del 2023"),
        ("¿Qué plantó Marta en marzo de 2023?", ["2023-03-01/2023-03-31"], [], "marzo de 2023"),
        ("¿Dónde estuvo en 2022?", ["2022-01-01/2022-12-31"], [], "en 2022"),
        ("¿Qué hizo el 3 de mayo?", [], [(5, 3, 3)], "3 de mayo"),
        ("¿Qué hizo en mayo?", [], [(5, 1, 31)], "en mayo"),
        ("¿Qué hizo a finales de Septiembre?", [], [(9, 21, 31)], "a finales de Septiembre"),  # its last third
        ("¿Qué comió ayer?", ["2026-11-29/2026-11-29"], [], "ayer"),
        ("¿Qué hizo la semana pasada?", ["2026-11-23/2026-11-29"], [], "la semana pasada"),
        ("¿Qué leyó el mes pasado?", ["2026-10-01/2026-10-31"], [], "el mes pasado"),
        ("¿Adónde fue el año pasado?", ["2025-01-01/2025-12-31"], [], "el año pasado"),
        ("¿Adónde fue hace dos años?", ["2024-01-01/2024-12-31"], [], "hace dos años"),
    ],
)
def test_spanish_times_in_a_query(query: str, ranges: list[str], yearless: list[tuple[int, int, int]], span: str) -> None:
    assert asked(query) == (ranges, yearless, [span])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ayer fui a Sevilla.", ["2023-06-02/2023-06-02"]),
        ("Anoche llovió.", ["2023-06-02/2023-06-02"]),
        ("Yo anteayer me apunté.", ["2023-06-01/2023-06-01"]),
        ("Hoy empecé a entrenar.", ["2023-06-03/2023-06-03"]),
        ("Esta mañana corrí.", ["2023-06-03/2023-06-03"]),
        ("Mañana te llamo.", ["2023-06-04/2023-06-04"]),
        ("Nos vemos mañana por la mañana.", ["2023-06-04/2023-06-04"]),
        ("Pasado mañana salimos.", ["2023-06-05/2023-06-05"]),
        ("La semana pasada corrí quince kilómetros.", ["2023-05-22/2023-05-28"]),
        ("El fin de semana pasado fuimos al pueblo.", ["2023-05-27/2023-05-28"]),
        ("El mes pasado planté tomates.", ["2023-05-01/2023-05-31"]),
        ("El mes que viene me mudo.", ["2023-07-01/2023-07-31"]),
        ("La próxima semana empiezo.", ["2023-06-05/2023-06-11"]),
        ("El año pasado estuve en Lisboa.", ["2022-01-01/2022-12-31"]),
        ("Este año quiero correr.", ["2023-01-01/2023-12-31"]),
        ("Lo leí hace tres años.", ["2020-01-01/2020-12-31"]),
        ("Hace 3 días.", ["2023-05-31/2023-05-31"]),
        ("Hace un par de semanas.", ["2023-05-20/2023-05-26"]),
        ("El verano pasado fuimos a la playa.", ["2022-06-01/2022-08-31"]),
        ("El viernes pasado cenamos fuera.", ["2023-06-02/2023-06-02"]),
        ("Salimos el 7 de julio.", ["2023-07-07/2023-07-07"]),
        ("Nos casamos el 8 de mayo de 2020.", ["2020-05-08/2020-05-08"]),
    ],
)
def test_spanish_times_in_an_entry(text: str, expected: list[str]) -> None:
    assert refs(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Por la mañana corro.",  # the morning, not tomorrow
        "Cada mañana compro fruta.",
        "Me levanto temprano de mañana.",
        "La semana tiene siete días.",  # a week, no particular one
        "Un mes es mucho tiempo.",
        "Mayo es mi mes favorito.",  # a month named, not a time of the text
        "Hace frío.",  # "hace" without a duration
        "Tengo 3 gatos y 2 perros.",
        "The Mayo 2023 report",  # English text: no Spanish reading
    ],
)
def test_spanish_non_times(text: str) -> None:
    assert refs(text) == []


# ---------------------------------------------------------------------------- Hindi


@pytest.mark.parametrize(
    ("query", "ranges", "yearless"),
    [
        ("3 मई 2023 को राहुल ने क्या सीखना शुरू किया?", ["2023-05-03/2023-05-03"], []),
        ("३ मई २०२३ को क्या हुआ?", ["2023-05-03/2023-05-03"], []),  # Devanagari digits
        ("16 सितंबर 2023 को अनीता कहाँ से लौटी?", ["2023-09-16/2023-09-16"], []),
        ("16 सितम्बर, 2023", ["2023-09-16/2023-09-16"], []),
        ("जून 2023 में प्रिया की मैनेजर कौन थी?", ["2023-06-01/2023-06-30"], []),
        ("2022 में क्या हुआ?", ["2022-01-01/2022-12-31"], []),
        ("3 मई को क्या हुआ?", [], [(5, 3, 3)]),
        ("मई में क्या हुआ?", [], [(5, 1, 31)]),
        ("पिछले हफ्ते क्या किया?", ["2026-11-23/2026-11-29"], []),
        ("पिछले साल कहाँ गए?", ["2025-01-01/2025-12-31"], []),
    ],
)
def test_hindi_times_in_a_query(query: str, ranges: list[str], yearless: list[tuple[int, int, int]]) -> None:
    assert asked(query)[:2] == (ranges, yearless)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("आज ही मैंने तबला सीखना शुरू किया है।", ["2023-06-03/2023-06-03"]),
        # कल is yesterday with a past verb, tomorrow with a future one, else both sides.
        ("कल मैंने उसके साथ तीन फ्लैट देखे थे।", ["2023-06-02/2023-06-02"]),
        ("कल मैं बाज़ार गया।", ["2023-06-02/2023-06-02"]),
        ("कल मैं बाज़ार जाऊँगा।", ["2023-06-04/2023-06-04"]),
        ("कल हम मिलेंगे।", ["2023-06-04/2023-06-04"]),
        ("कल पार्टी है।", ["2023-06-02/2023-06-04"]),
        ("कल मैं आया था। कल फिर आऊँगा।", ["2023-06-02/2023-06-02", "2023-06-04/2023-06-04"]),
        ("परसों तक तैयार हो जाएगी।", ["2023-06-05/2023-06-05"]),
        ("पिछले हफ्ते चप्पल चबा डाली।", ["2023-05-22/2023-05-28"]),
        ("पिछले हफ़्ते", ["2023-05-22/2023-05-28"]),  # हफ़्ते with a nukta
        ("पिछले सप्ताह", ["2023-05-22/2023-05-28"]),
        ("अगले हफ्ते", ["2023-06-05/2023-06-11"]),
        ("पिछले महीने", ["2023-05-01/2023-05-31"]),
        ("अगले महीने जयपुर जा रहा हूँ", ["2023-07-01/2023-07-31"]),
        ("पिछले साल", ["2022-01-01/2022-12-31"]),
        ("पिछले वर्ष", ["2022-01-01/2022-12-31"]),
        ("इस सप्ताहांत", ["2023-06-03/2023-06-04"]),
        ("इस साल", ["2023-01-01/2023-12-31"]),
        ("अगले साल परीक्षा है", ["2024-01-01/2024-12-31"]),
        ("दो साल पहले", ["2021-01-01/2021-12-31"]),
        ("3 दिन पहले", ["2023-05-31/2023-05-31"]),
        ("3 मई 2023 को", ["2023-05-03/2023-05-03"]),
        ("मई में गए थे", ["2023-05-01/2023-05-31"]),
    ],
)
def test_hindi_times_in_an_entry(text: str, expected: list[str]) -> None:
    assert refs(text) == expected


def test_the_verb_that_decides_kal_is_looked_for_in_a_bounded_window() -> None:
    """Without a clause end, each कल read the rest of the text for its verb: quadratic on a
    transcript without punctuation (250,000 characters took 25 s; a text of "कल " repeated,
    minutes). The verb is looked for in its clause, at most a window of characters after it:
    a verb a page later is not its verb."""
    padding = "और फिर हम बाजार के पास वाले बड़े पुराने मंदिर के सामने " * 8  # over 200 characters, no verb
    assert refs("कल " + padding + "गया था") == ["2023-06-02/2023-06-04"]  # neither tense: both sides
    assert refs("कल " + padding[:60] + "गया था") == ["2023-06-02/2023-06-02"]  # its verb: yesterday
    transcript = "मैं कल बाजार गया और वहाँ बहुत भीड़ थी फिर हम घर आए "  # no danda
    assert refs(transcript * 2_000) == refs(transcript) == ["2023-06-02/2023-06-02"]


@pytest.mark.parametrize(
    "text",
    [
        "कलम से लिखो",  # कलम (pen) begins with कल
        "सकल घरेलू उत्पाद",  # कल inside a word
        "आजकल सब ठीक है",  # "these days", not today
        "मार्च निकाला गया",  # a march (protest), no postposition of time
        "मेरे पास 3 किताबें हैं",
        "साल भर की बात",
    ],
)
def test_hindi_non_times(text: str) -> None:
    assert refs(text) == []


# ---------------------------------------------------------------------------- French, German, Italian, Portuguese


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # French
        ("Hier je suis allée à Lyon.", ["2023-06-02/2023-06-02"]),
        ("Avant-hier on a couru.", ["2023-06-01/2023-06-01"]),
        ("Demain je pars.", ["2023-06-04/2023-06-04"]),
        ("Après-demain c'est fini.", ["2023-06-05/2023-06-05"]),
        ("La semaine dernière j'ai couru.", ["2023-05-22/2023-05-28"]),
        ("Le mois prochain je déménage.", ["2023-07-01/2023-07-31"]),
        ("L'été dernier nous étions à Nice.", ["2022-06-01/2022-08-31"]),
        ("Il y a deux semaines j'ai commencé.", ["2023-05-20/2023-05-26"]),
        ("Lundi dernier on a dîné.", ["2023-05-29/2023-05-29"]),
        ("Cette année je veux courir.", ["2023-01-01/2023-12-31"]),
        ("Nous nous sommes mariés le 8 mai 2020.", ["2020-05-08/2020-05-08"]),
        ("On part le 7 juillet.", ["2023-07-07/2023-07-07"]),
        ("En mai j'ai planté des tomates.", ["2023-05-01/2023-05-31"]),
        ("L'autre jour j'ai vu Paul.", ["2023-05-27/2023-06-02"]),
        ("Le 3 mars j'ai vu Paul.", ["2023-03-03/2023-03-03"]),
        ("J'arrive apres demain.", ["2023-06-05/2023-06-05"]),  # typed without the accent
        ("Le dernier week-end j'ai couru.", ["2023-05-27/2023-05-28"]),
        ("À la mi-mai je suis parti.", ["2023-05-11/2023-05-20"]),  # the middle third
        # German
        ("Gestern war ich in Berlin.", ["2023-06-02/2023-06-02"]),
        ("Vorgestern sind wir gelaufen.", ["2023-06-01/2023-06-01"]),
        ("Morgen fahre ich los.", ["2023-06-04/2023-06-04"]),
        ("Ich sehe dich morgen.", ["2023-06-04/2023-06-04"]),
        ("Heute Morgen war es kalt.", ["2023-06-03/2023-06-03"]),  # this morning, not tomorrow
        ("Letzte Woche bin ich gelaufen.", ["2023-05-22/2023-05-28"]),
        ("Nächsten Monat ziehe ich um.", ["2023-07-01/2023-07-31"]),
        ("Letzten Sommer waren wir in Italien.", ["2022-06-01/2022-08-31"]),
        ("Vor zwei Wochen habe ich angefangen.", ["2023-05-20/2023-05-26"]),
        ("Letzten Freitag haben wir gegessen.", ["2023-06-02/2023-06-02"]),
        ("Wir haben am 8. Mai 2020 geheiratet.", ["2020-05-08/2020-05-08"]),  # German's reading, not "Mai 2020"
        ("Im Mai haben wir Tomaten gepflanzt.", ["2023-05-01/2023-05-31"]),
        ("Dieses Jahr will ich laufen.", ["2023-01-01/2023-12-31"]),
        ("Am 3. August 2023 haben wir geheiratet.", ["2023-08-03/2023-08-03"]),  # German's day, not English's month
        ("Am 5. September bin ich umgezogen.", ["2023-09-05/2023-09-05"]),
        ("Ende April ziehe ich um.", ["2023-04-21/2023-04-30"]),  # the last third
        ("Vorgestern Morgen bin ich gelaufen.", ["2023-06-01/2023-06-01"]),
        ("Hier ist das Protokoll vom 3. Mai.", ["2023-05-03/2023-05-03"]),  # German "hier" is "here"
        # Italian
        ("Ieri sono andata a Roma.", ["2023-06-02/2023-06-02"]),
        ("L'altro ieri abbiamo corso.", ["2023-06-01/2023-06-01"]),
        ("Domani parto.", ["2023-06-04/2023-06-04"]),
        ("La settimana scorsa ho corso.", ["2023-05-22/2023-05-28"]),
        ("Il mese prossimo trasloco.", ["2023-07-01/2023-07-31"]),
        ("L'estate scorsa eravamo a Napoli.", ["2022-06-01/2022-08-31"]),
        ("Due settimane fa ho iniziato.", ["2023-05-20/2023-05-26"]),
        ("Venerdì scorso abbiamo cenato fuori.", ["2023-06-02/2023-06-02"]),
        ("Ci siamo sposati il 8 maggio 2020.", ["2020-05-08/2020-05-08"]),
        ("A maggio ho piantato pomodori.", ["2023-05-01/2023-05-31"]),
        ("Quest'anno voglio correre.", ["2023-01-01/2023-12-31"]),
        ("Siamo andati altro ieri al mare.", ["2023-06-01/2023-06-01"]),
        ("Il 1° maggio abbiamo fatto festa.", ["2023-05-01/2023-05-01"]),
        # Portuguese
        ("Ontem fui a Lisboa.", ["2023-06-02/2023-06-02"]),
        ("Anteontem corremos.", ["2023-06-01/2023-06-01"]),
        ("Amanhã eu parto.", ["2023-06-04/2023-06-04"]),
        ("Na semana passada corri.", ["2023-05-22/2023-05-28"]),
        ("No mês que vem eu mudo.", ["2023-07-01/2023-07-31"]),
        ("No verão passado estivemos em Faro.", ["2022-06-01/2022-08-31"]),
        ("Há duas semanas comecei.", ["2023-05-20/2023-05-26"]),
        ("Duas semanas atrás comecei.", ["2023-05-20/2023-05-26"]),
        ("Na sexta-feira passada jantámos fora.", ["2023-06-02/2023-06-02"]),
        ("Casámos a 8 de maio de 2020.", ["2020-05-08/2020-05-08"]),
        ("Em maio plantei tomates.", ["2023-05-01/2023-05-31"]),
        ("Este ano quero correr.", ["2023-01-01/2023-12-31"]),
        ("No 1º de maio fomos à praia.", ["2023-05-01/2023-05-01"]),
    ],
)
def test_french_german_italian_portuguese_times_in_an_entry(text: str, expected: list[str]) -> None:
    assert refs(text) == expected


@pytest.mark.parametrize(
    ("query", "ranges", "yearless", "span"),
    [
        ("Qu'a fait Paul le 3 mai 2023 ?", ["2023-05-03/2023-05-03"], [], "le 3 mai 2023"),
        ("Qu'est-ce qu'il a fait en mai ?", [], [(5, 1, 31)], "en mai"),
        ("Où était-il en 2022 ?", ["2022-01-01/2022-12-31"], [], "en 2022"),
        ("Où est-il allé l'année dernière ?", ["2025-01-01/2025-12-31"], [], "année dernière"),
        ("Was hat Jonas am 3. Mai 2023 gemacht?", ["2023-05-03/2023-05-03"], [], "am 3. Mai 2023"),
        ("Was ist im März 2023 passiert?", ["2023-03-01/2023-03-31"], [], "März 2023"),
        ("Wo war er im Jahr 2022?", ["2022-01-01/2022-12-31"], [], "im Jahr 2022"),
        ("Was haben wir am 3. August gemacht?", [], [(8, 3, 3)], "am 3. August"),
        ("Was ist im April passiert?", [], [(4, 1, 31)], "im April"),
        ("Cosa ha fatto Luca il 3 maggio 2023?", ["2023-05-03/2023-05-03"], [], "il 3 maggio 2023"),
        ("Dove è andata nel 2022?", ["2022-01-01/2022-12-31"], [], "nel 2022"),
        ("O que aconteceu em 3 de maio de 2023?", ["2023-05-03/2023-05-03"], [], "3 de maio de 2023"),
        ("O que fez o João em maio de 2023?", ["2023-05-01/2023-05-31"], [], "maio de 2023"),
        ("Onde esteve em 2022?", ["2022-01-01/2022-12-31"], [], "em 2022"),
    ],
)
def test_french_german_italian_portuguese_times_in_a_query(
    query: str, ranges: list[str], yearless: list[tuple[int, int, int]], span: str
) -> None:
    assert asked(query) == (ranges, yearless, [span])


@pytest.mark.parametrize(
    "text",
    [
        "Am Morgen laufe ich.",  # the morning, not tomorrow
        "Guten Morgen!",
        "Jeden Morgen laufe ich.",
        "Es ist ein schöner Tag.",  # a day, no particular one
        "Vor dem Haus steht ein Baum.",
        "Il a fait froid.",
        "Je vais en ville.",
        "Il y a un chat.",  # "il y a" without a duration
        "Ho fatto una torta.",
        "Tenho uma casa em Lisboa.",
        "The Mai Tai was great.",  # English: no French or German reading
        # The review's: a word of one of these languages in another's text, or in English.
        "Ich bin hier.",  # German "here", no French "yesterday"
        "Ik ben hier gisteren geweest.",
        "Bonjour, hier I met Paul.",
        "Am nächsten Morgen fuhren wir los.",  # the morning, not tomorrow
        "Montag Morgen Meeting.",
        "I ate Marco's pizza.",
        "We had 12 Mai Tais.",
        "Mai 2019 photos are here.",
        "The Oggi magazine is nice.",
        "De enero a marzo trabajé allí.",  # Spanish: no Italian "a marzo"
    ],
)
def test_french_german_italian_portuguese_non_times(text: str) -> None:
    assert refs(text) == []


def test_an_english_text_naming_an_english_month_reads_as_before() -> None:
    # "April", "August", "September", "November" are German months too: English has no
    # German marker, so English reads them.
    assert refs("In April we went.") == ["2023-04-01/2023-04-30"]
    assert refs("We met in August 2023.") == ["2023-08-01/2023-08-31"]
    assert refs("We met on 3 August 2023, an island day.") == ["2023-08-03/2023-08-03"]


def test_a_question_with_here_asks_for_no_time() -> None:
    assert asked("Was war hier los?") == ([], [], [])
    assert asked("Worüber haben wir am Montag Morgen gesprochen?") == ([], [], [])


# ---------------------------------------------------------------------------- through the service


def turn(text: str, at: datetime, author: str) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author=author, timestamp=at)


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("昨天我去了成都看奶奶。", "2023年6月2日我去了哪里看奶奶？"),
        ("昨日、京都で抹茶を飲んだ。", "2023年6月2日に京都で何を飲んだ？"),
        ("Ayer fui a Sevilla a ver a mi abuela.", "¿A quién vi en Sevilla el 2 de junio de 2023?"),
        # (With the Hindi pipeline "मैं कहाँ गया" is all stop words: the question names the city.)
        ("कल मैं जयपुर गया था।", "2 जून 2023 को मैं जयपुर किसके साथ गया?"),
        ("Hier je suis allée à Lyon voir ma grand-mère.", "Qui ai-je vu à Lyon le 2 juin 2023 ?"),
        ("Gestern war ich in Berlin bei meiner Oma.", "Wen habe ich am 2. Juni 2023 in Berlin besucht?"),
        ("Ieri sono andata a Roma dalla nonna.", "Chi ho visto a Roma il 2 giugno 2023?"),
        ("Ontem fui a Lisboa ver a minha avó.", "Quem vi em Lisboa em 2 de junho de 2023?"),
    ],
)
async def test_a_dated_question_finds_the_day_said_another_way(service: MemoryService, said: str, question: str) -> None:
    # The entry says "yesterday" on 3 June; months later the same words said again. Only
    # the first is about 2 June (said the day after): the question's date decides.
    await service.add_session("app", "u", "s1", [turn(said, SAID, "Ana")])
    await service.add_session("app", "u", "s2", [turn(said, datetime(2023, 9, 20, 10, 0, tzinfo=UTC), "Ana")])
    response = await service.search(SearchRequest(query=question, app_name="app", user_id="u", as_of=NOW))
    assert response.hits[0].memory.timestamp == SAID
    assert response.hits[0].matched_time == "said 2023-06-03" and response.hits[0].time_score > 0
    assert response.hits[1].matched_time is None
    assert refs(said) == ["2023-06-02/2023-06-02"]


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("昨天的婚礼太美了。", "2023年6月2日发生了什么？"),
        ("昨日、京都で抹茶を飲んだ。", "2023年6月2日に何がありましたか？"),
        ("Ayer fui a Sevilla a ver a mi abuela.", "¿Qué pasó el 2 de junio de 2023?"),
        ("कल मैं जयपुर गया था।", "2 जून 2023 को क्या हुआ?"),
        ("Hier je suis allée à Lyon voir ma grand-mère.", "Qu'est-ce qui s'est passé le 2 juin 2023 ?"),
        ("Gestern war ich in Berlin bei meiner Oma.", "Worüber haben wir am 2. Juni 2023 gesprochen?"),
        ("Ieri sono andata a Roma dalla nonna.", "Cosa è successo il 2 giugno 2023?"),
        ("Ontem fui a Lisboa ver a minha avó.", "O que é que aconteceu em 2 de junho de 2023?"),
    ],
)
async def test_a_question_asking_for_a_day_alone_finds_what_refers_to_it(
    service: MemoryService, said: str, question: str
) -> None:
    # Its words besides the date ask for what was said then, in the question's language.
    await service.add_session("app", "u", "s1", [turn(said, SAID, "Ana")])
    await service.add_session("app", "u", "s2", [turn(said, datetime(2023, 9, 20, 10, 0, tzinfo=UTC), "Ana")])
    response = await service.search(SearchRequest(query=question, app_name="app", user_id="u", as_of=NOW))
    assert [(h.memory.timestamp, h.matched_time, h.score) for h in response.hits] == [
        (SAID, "refers to 2023-06-02/2023-06-02", 1.0)
    ]


_WORDS = [
    "hier", "gestern", "ieri", "ontem", "demain", "morgen", "Morgen", "domani", "amanhã", "il", "y", "a", "deux",
    "semaines", "vor", "zwei", "Wochen", "fa", "há", "duas", "atrás", "la", "semaine", "dernière", "letzte",
    "Woche", "settimana", "scorsa", "na", "passada", "le", "am", "3.", "3", "1er", "1°", "1º", "de", "mai", "Mai",
    "August", "maggio", "maio", "2023", "9999", "29", "février", "je", "ich", "sono", "não", "en", "im", "nel", "em",
    "l'été", "dernier", "quest'anno", "Jahr", "32.", "0", "99", "ans", "I", "ate", "Marco", "fine", ",", ".", "\n",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=14), st.dates(min_value=date(1900, 1, 1), max_value=date(9999, 12, 31)))
def test_any_mix_of_these_languages_reads_without_error_and_in_order(words: list[str], day: date) -> None:
    text = " ".join(words)
    said = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    for r in mentioned_ranges(text, said):
        assert r.first <= r.last
    when = query_time(text, said)
    if when is not None:
        assert all(r.first <= r.last for r in when.ranges)
        assert all(0 <= a < b <= len(text) for a, b in when.spans)


# ---------------------------------------------------------------------------- thirds (all languages)


@pytest.mark.parametrize(
    ("query", "ranges", "yearless", "span"),
    [
        # A third of a month (days 1-10, 11-20, 21 to its end) or of a year (four months).
        ("Qu'a fait Ana début mai 2023 ?", ["2023-05-01/2023-05-10"], [], "début mai 2023"),
        ("Qu'as-tu fait mi-mai ?", [], [(5, 11, 20)], "mi-mai"),
        ("Qu'as-tu fait au début de 2023 ?", ["2023-01-01/2023-04-30"], [], "au début de 2023"),
        ("Was hast du Anfang Mai gemacht?", [], [(5, 1, 10)], "Anfang Mai"),
        ("Was hast du Ende Mai 2023 gemacht?", ["2023-05-21/2023-05-31"], [], "Ende Mai 2023"),
        ("Was hast du Anfang 2023 gemacht?", ["2023-01-01/2023-04-30"], [], "Anfang 2023"),
        ("Cosa hai fatto a metà maggio?", [], [(5, 11, 20)], "a metà maggio"),
        ("Cosa hai fatto a fine 2022?", ["2022-09-01/2022-12-31"], [], "a fine 2022"),
        ("O que você fez em meados de maio de 2023?", ["2023-05-11/2023-05-20"], [], "meados de maio de 2023"),
        ("O que fez no começo de 2023?", ["2023-01-01/2023-04-30"], [], "no começo de 2023"),
        ("¿Qué hiciste a principios de mayo?", [], [(5, 1, 10)], "a principios de mayo"),
        ("¿Qué hiciste a mediados de 2023?", ["2023-05-01/2023-08-31"], [], "a mediados de 2023"),
        # Chinese and Japanese write it after the month or the year.
        ("你5月初做了什么？", [], [(5, 1, 10)], "5月初"),
        ("你2023年5月下旬做了什么？", ["2023-05-21/2023-05-31"], [], "2023年5月下旬"),
        ("2023年底你在哪里？", ["2023-09-01/2023-12-31"], [], "2023年底"),
        ("5月の上旬に何をしましたか？", [], [(5, 1, 10)], "5月の上旬"),
        # Not a third: "5月中に" is "during May", 初一 a day of a lunar month.
        ("5月中に何をしましたか？", [], [(5, 1, 31)], "5月"),
        ("五月初一发生了什么？", [], [(5, 1, 31)], "五月"),
    ],
)
def test_a_third_of_a_month_or_year_in_other_languages(
    query: str, ranges: list[str], yearless: list[tuple[int, int, int]], span: str
) -> None:
    assert asked(query) == (ranges, yearless, [span])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Je suis allé à Lyon fin avril.", ["2023-04-21/2023-04-30"]),
        ("Wir waren Anfang Mai in Berlin.", ["2023-05-01/2023-05-10"]),
        ("Fuimos a Madrid a finales de abril.", ["2023-04-21/2023-04-30"]),
        # "abril" (and French "avril") were read as a misspelt English "april" in a text of
        # ASCII letters only, and the Spanish grammar then found no month.
        ("Fuimos a Madrid en abril.", ["2023-04-01/2023-04-30"]),
        ("Je suis allé à Lyon en avril avec elle.", ["2023-04-01/2023-04-30"]),
    ],
)
def test_thirds_and_other_languages_months_in_an_entry(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID)] == expected


# ---------------------------------------------------------------------------- holidays (other languages)


@pytest.mark.parametrize(
    ("query", "ranges", "yearless", "span"),
    [
        ("Qu'avons-nous fait à Noël ?", [], [(12, 24, 26)], "Noël"),
        ("Qu'avons-nous fait pour Noël 2022 ?", ["2022-12-24/2022-12-26"], [], "Noël 2022"),
        ("Was haben wir zu Ostern 2023 gemacht?", ["2023-04-07/2023-04-10"], [], "Ostern 2023"),
        ("Was haben wir an Heiligabend gemacht?", [], [(12, 24, 24)], "Heiligabend"),
        ("Cosa abbiamo fatto a Natale?", [], [(12, 24, 26)], "Natale"),
        # Without a year a movable one falls on days of two months: both are kept (the
        # April days of the French, German, Italian and Portuguese ones were dropped).
        ("Cosa abbiamo fatto a Pasquetta?", [], [(3, 23, 31), (4, 1, 26)], "Pasquetta"),
        ("Qu'avons-nous fait à Pâques ?", [], [(3, 20, 31), (4, 1, 26)], "Pâques"),
        ("Cosa abbiamo fatto a Pasquetta 2023?", ["2023-04-10/2023-04-10"], [], "Pasquetta 2023"),
        ("O que fizemos no Natal de 2022?", ["2022-12-24/2022-12-26"], [], "Natal de 2022"),
        ("¿Qué hicimos en Nochevieja de 2022?", ["2022-12-31/2022-12-31"], [], "Nochevieja de 2022"),
        ("¿Qué hicimos en Semana Santa de 2023?", ["2023-04-02/2023-04-09"], [], "Semana Santa de 2023"),
        ("2022年圣诞节我们做了什么？", ["2022-12-24/2022-12-26"], [], "2022年圣诞节"),
        ("大晦日に何をしましたか？", [], [(12, 31, 31)], "大晦日"),
    ],
)
def test_holidays_in_other_languages_in_a_query(
    query: str, ranges: list[str], yearless: list[tuple[int, int, int]], span: str
) -> None:
    assert asked(query) == (ranges, yearless, [span])


@pytest.mark.parametrize(
    "text",
    [
        "Eu nasci em Natal.",  # the city
        "Minha cidade natal é linda, não é?",  # one's home town
        "Qu'a dit Noël à propos du film ?",  # a first name (after no word of the holiday's)
        "Cosa ha detto Natale del film?",
        "七夕情人节我们做了什么？",  # the lunar one
    ],
)
def test_names_and_words_that_are_no_holiday_in_other_languages(text: str) -> None:
    assert asked(text, None) == ([], [], [])


def test_a_holiday_in_another_language_in_an_entry_is_the_nearest_one() -> None:
    # English tense words are not these languages': the nearest one, as an English sentence
    # without a tense.
    said = datetime(2023, 1, 10, tzinfo=UTC)
    for text in ("An Weihnachten waren wir in Berlin.", "À Noël nous étions à Lyon.", "En Navidad fuimos a Madrid."):
        assert [r.iso() for r in mentioned_ranges(text, said)] == ["2022-12-24/2022-12-26"], text
