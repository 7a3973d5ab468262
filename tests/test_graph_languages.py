"""The graph in the seeds' languages: Chinese names and terms from the tagger, questions linked by character spans,
the walk reaching a second passage through a shared Chinese entity, and Polish names in their base form."""

from __future__ import annotations

from core.records import Chunk, GraphSnapshot
from core.settings import ExtractionSettings, RetrievalSettings
from core.records import chunk_id
from extraction.offline import OfflineExtractor
from extraction.resolution import resolve
from retrieval.graph_walk import walk_for_index
from retrieval.index import ChunkIndex
from retrieval.lexicon import EntityLexicon, KnownEntity


def _chunk(doc: str, text: str) -> Chunk:
    return Chunk(chunk_id(doc, 0), doc, 0, text, 0, len(text), len(text), doc, f"{doc}-h")


def _entities(*texts: str, base_forms: bool = True, as_written: bool = False) -> list[tuple[str, str]]:
    """(name, type) of each mention: in its base form (the key it is merged by), or ``as_written``."""
    settings = ExtractionSettings(name_base_forms=base_forms)
    result = OfflineExtractor(settings).extract([_chunk(f"d{i}", t) for i, t in enumerate(texts)])
    return [((e.written or e.name) if as_written else e.name, e.type) for ex in result.extractions for e in ex.entities]


def test_chinese_terms_a_document_repeats_are_entities_and_related() -> None:
    text = "调度器负责把任务分配给工作节点。调度器每五分钟运行一次。工作节点向调度器报告状态。"
    names = dict(_entities(text))
    assert {"调度器", "工作节点"} <= set(names), names  # the segmenter splits them (调度+器): runs of nouns, repeated
    result = OfflineExtractor(ExtractionSettings()).extract([_chunk("d", text)])
    assert {(r.source, r.target) for r in result.extractions[0].relations} >= {("调度器", "工作节点")}
    # a run of nouns used once is no term
    assert "任务分配" not in names


def test_a_noun_the_segmenter_keeps_whole_is_a_term_where_a_document_repeats_it_and_few_documents_use_it() -> None:
    from extraction.wordlike import WordModel

    gears = "齿轮把动力传给车轮。齿轮磨损后需要更换。这个方法很简单。这个方法已经过时。"
    plague = "黑死病于1347年传入欧洲。黑死病造成了大量死亡。"
    names = dict(_entities(gears, plague))
    assert {"齿轮", "黑死病", "方法"} <= set(names), names  # each repeated by its document (no corpus to judge by)
    assert names["齿轮"] == "concept" and "车轮" not in names  # 车轮 is used once
    # In a corpus where most documents use 方法, it is a common word of the language; 齿轮 stays a term.
    others = [f"第{i}个方法很好用。" for i in range(60)]
    docs = [gears, plague, *others]
    words = WordModel.of_texts(docs)
    assert not words.common_term("齿轮") and not words.common_term("黑死病") and words.common_term("方法")
    result = OfflineExtractor(ExtractionSettings(), words).extract([_chunk(f"d{i}", t) for i, t in enumerate(docs)])
    found = {e.name for ex in result.extractions for e in ex.entities}
    assert {"齿轮", "黑死病"} <= found and "方法" not in found, found


def test_a_term_another_document_repeats_is_an_entity_where_a_document_names_it_once() -> None:
    """黑死病 (three characters) repeated by one document is an entity in the paragraph naming it once; 齿轮 (two,
    where the common words are) only where it is repeated; a term no document repeats is none anywhere."""
    from extraction.wordlike import WordModel

    docs = ["黑死病于1347年传入欧洲。黑死病造成了大量死亡。齿轮把动力传给车轮。齿轮磨损后需要更换。",
            "那一年黑死病到达英格兰，齿轮也坏了。",
            "蒸汽机在工厂里很常见。", "工程师修理了蒸汽机。",
            *(f"第{i}篇文章讲天气。" for i in range(60))]
    words = WordModel.of_texts(docs)
    assert words.recurring_term("黑死病") and not words.recurring_term("蒸汽机")
    result = OfflineExtractor(ExtractionSettings(), words).extract([_chunk(f"d{i}", t) for i, t in enumerate(docs)])
    found = [{e.name for e in ex.entities} for ex in result.extractions]
    assert {"黑死病", "齿轮"} <= found[0], found[0]
    assert "黑死病" in found[1] and "齿轮" not in found[1], found[1]
    assert "蒸汽机" not in found[2] | found[3]  # each uses it once: nothing establishes it
    # without the corpus, a document judges alone
    alone = OfflineExtractor(ExtractionSettings()).extract([_chunk("d1", docs[1])])
    assert "黑死病" not in {e.name for e in alone.extractions[0].entities}


def test_a_capital_after_any_language_s_opening_quote_is_its_place_s_unless_the_name_is_quoted_alone() -> None:
    """„Kiedy wydała…” opens a quotation as “When…” does: the capital of its first word says nothing of a name
    (no entity "Kiedy", whose lemma a Polish question would meet), in Polish, French or German quotes. A name
    quoted alone („Batory”, “Titanic”, „The New York Times”) is a title or a name mentioned as such: a name, kept
    whole. A mark after a word closes its quotation (»Lalkę« Prusa) or is no quote (Paris‚ France)."""
    texts = ("Przyznała w wywiadzie: „Kiedy wydała album, pomyślałam o Beyoncé”. Potem mówiła „Może jutro”.",
             "Il a dit «Pourquoi pas» et il est parti.", "Er sagte „Vielleicht morgen“ und ging.",
             "Rihanna wymienia Beyoncé w gronie ulubionych wokalistek.",
             "Statek „Batory” wypłynął z Gdyni. Klub „Legia” wygrał mecz. The ship “Titanic” sank.",
             "Czytał „The New York Times” codziennie i nucił „Say My Name” w domu.",
             "Czytałam »Lalkę« Prusa.", "The road from Paris‚ France to Berlin is long.")
    # (as written and in base form: "Say My Name", an English title a Polish text quotes, has no Polish base form)
    names = {n for n, _ in _entities(*texts, as_written=True) + _entities(*texts)}
    assert not names & {"Kiedy", "Może", "Pourquoi", "Vielleicht"}, names
    assert {"Beyoncé", "Batory", "Legia", "Titanic", "The New York Times", "Say My Name", "Prus",
            "France"} <= names, names
    assert not names & {"York Times", "Name"}, names


def test_a_word_quoted_alone_is_a_name_unless_the_corpus_writes_it_in_lower_case() -> None:
    """“Titanic” and „Legia” are names; "Save", “Settings” and 'Advanced' are words a documentation corpus writes
    in lower case, quoted as labels; a quoted key ("Authorization": ...) is no name; a title in single quotes keeps
    its first word as one in double quotes does; a quotation after a Chinese character opens there as after a
    space (以“Flung to the Heedless Winds”: no entity "Flung")."""
    from extraction.wordlike import WordModel

    texts = ['Click the "Save" button, then open “Settings” and the \'Advanced\' tab.',
             '"Authorization": "Bearer token" is sent with each request.',
             "The ship “Titanic” sank in 1912, and fans of „Legia” sang.",
             "Capra directed 'It Happened One Night' in 1934.",
             "以“Flung to the Heedless Winds”为题的赞美诗流传很广。"]
    prose = [f"Users save their settings in the advanced view {i} times a day, and save them again." for i in range(5)]
    words = WordModel.of_texts(texts + prose)
    result = OfflineExtractor(ExtractionSettings(), words).extract([_chunk(f"d{i}", t) for i, t in enumerate(texts)])
    names = {e.name for ex in result.extractions for e in ex.entities}
    assert {"Titanic", "Legia", "It Happened One Night"} <= names, names
    assert not names & {"Save", "Settings", "Advanced", "Authorization", "Flung", "Happened One Night"}, names


def test_a_corpus_about_one_system_keeps_its_hub_term_and_a_kept_run_stands_for_its_nouns() -> None:
    from extraction.wordlike import WordModel

    docs = [f"调度器负责把任务{i}分配给工作节点。调度器每{i}分钟运行一次。工作节点的锅炉压力正常。" for i in range(5)]
    english = [f"Document {i} is written in English about schedulers." for i in range(300)]
    words = WordModel.of_texts(docs + english)
    assert words.documents == 5  # only texts in a CJK script count towards a Chinese term's share
    result = OfflineExtractor(ExtractionSettings(), words).extract([_chunk(f"d{i}", t) for i, t in enumerate(docs)])
    for ex in result.extractions:
        names = {e.name for e in ex.entities}
        assert {"调度器", "工作节点"} <= names, names  # used by every document, and longer than a common word
        assert "节点" not in names, names  # inside the run 工作节点, which stands for it there
        pairs = {(r.source, r.target) for r in ex.relations}
        assert ("调度器", "工作节点") in pairs and not any("节点" in (a, b) for a, b in pairs), pairs


def test_a_term_the_dictionary_splits_is_one_entity_where_the_corpus_writes_its_words_together() -> None:
    """超级碗 is 超级 + 碗 to the segmenter, 碗 tagged as a measure word: no run of nouns. The corpus writes the two
    together wherever it uses 碗, so the span is a term. A word beside many others joins no term: 是 of 是对流层
    (是 opens many clauses), 说 of 博士说. With no corpus to judge by, no such span is kept."""
    from extraction.wordlike import WordModel

    docs = ["第四十九届超级碗在亚利桑那举行。野马队赢得了超级碗。",
            "超级碗是美国的年度冠军赛。每年二月举行超级碗。",
            "最低的一层是对流层。天气现象发生在对流层。博士说对流层很薄。",
            "博士说温度很高。博士说这是第一次。他是医生。这是实验室。那是图书馆。",
            "他是学生。她是老师。这是问题。对流层是大气的一部分。",
            "他说很好。老师说不行。学生说可以。医生说没事。"]
    words = WordModel.of_texts(docs)
    assert words.cohesive([("超级", "碗")])
    assert not words.cohesive([("是", "对流层")]) and not words.cohesive([("博士", "说")])
    result = OfflineExtractor(ExtractionSettings(), words).extract([_chunk(f"d{i}", t) for i, t in enumerate(docs)])
    found = {e.name for ex in result.extractions for e in ex.entities}
    assert "超级碗" in found, found
    assert not any(n.startswith("是") or n.endswith("说") for n in found), found
    # A span that holds a term kept in its own right, at an end or inside, does not stand for it: 超导体 stays
    # the entity, 超导体具有 and 新型超导体具有 are none.
    for subject in ("超导体", "新型超导体"):
        physics = [f"{subject}具有零电阻。{subject}具有完全抗磁性。", *[f"材料{i}具有很高的强度。" for i in range(8)]]
        words = WordModel.of_texts(physics)
        result = OfflineExtractor(ExtractionSettings(), words).extract(
            [_chunk(f"p{i}", t) for i, t in enumerate(physics)])
        found = {e.name for ex in result.extractions for e in ex.entities}
        assert "超导体" in found and not any(n.endswith("具有") for n in found), found
    alone = OfflineExtractor(ExtractionSettings()).extract([_chunk("d0", docs[0])])
    assert "超级碗" not in {e.name for e in alone.extractions[0].entities}


def test_chinese_names_come_typed_and_whole_traditional_as_written() -> None:
    names = dict(_entities("职业碗防守截锋卡万·肖特以 11 分领先于全队，他的队友马里奥·爱迪生贡献了 6 次擒杀。",
                           "在歐洲，梵語的學術研究，由德國學者陸特和漢斯雷頓開創。"))
    assert names.get("卡万·肖特") == "person" and names.get("马里奥·爱迪生") == "person"
    assert names.get("歐洲") == "location" and names.get("德國") == "location"
    assert all(len(n) >= 2 for n in names), names
    assert not any(n in ("年末", "显示", "面部") for n in names)
    # every interpunct a text may join a name's parts with, the extractor's and the question spans' one set
    for mark in "\u00b7\u2022\u2027\u22c5\u30fb\uff65":
        assert dict(_entities(f"职业碗防守截锋卡万{mark}肖特以 11 分领先于全队。")).get(f"卡万{mark}肖特") == "person", mark


def test_chinese_questions_link_entities_by_character_spans() -> None:
    lexicon = EntityLexicon([KnownEntity("调度器", "concept", 3), KnownEntity("工作节点", "concept", 2)], 50)
    found = [e.name for e in lexicon.find("调度器多久把任务分配给工作节点一次？")]
    assert found == ["调度器", "工作节点"]


def test_a_two_character_chinese_name_is_linked_but_a_two_letter_latin_one_is_not() -> None:
    # two CJK characters are two words, as "New York" is: long enough; "US" is one word of two letters
    lexicon = EntityLexicon([KnownEntity("香港", "location", 4), KnownEntity("港", "location", 4),
                             KnownEntity("US", "name", 4)], 50)
    assert [e.name for e in lexicon.find("香港的港口在US哪一年开放？")] == ["香港"]


def test_a_transliterated_name_links_however_the_question_marks_its_parts() -> None:
    # the interpunct is written as U+00B7, U+2022 or U+30FB, or left out, for the same name
    names = ["约瑟夫·普利斯特里", "卡万•肖特", "马里奥・爱迪生"]
    lexicon = EntityLexicon([KnownEntity(n, "person", 2) for n in names], 50)
    for question, want in [("约瑟夫·普利斯特里在哪一年发现氧气?", "约瑟夫·普利斯特里"),
                           ("约瑟夫•普利斯特里在哪一年发现氧气?", "约瑟夫·普利斯特里"),
                           ("约瑟夫普利斯特里在哪一年发现氧气?", "约瑟夫·普利斯特里"),
                           ("卡万・肖特得了几分？", "卡万•肖特"), ("马里奥·爱迪生贡献了几次擒杀？", "马里奥・爱迪生")]:
        assert [e.name for e in lexicon.find(question)] == [want], question
    docs = [_chunk("p", "约瑟夫·普利斯特里于1774年发现氧气。约瑟夫·普利斯特里是英国化学家。"),
            _chunk("q", "舍勒在乌普萨拉研究空气。")]
    index = ChunkIndex(RetrievalSettings(embedder="none"), embedder=None)
    index.add(docs)
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract(docs).extractions)
    walk = walk_for_index(GraphSnapshot(tuple(entities), tuple(relations)), index)
    assert [s.name for s in walk.link("约瑟夫•普利斯特里在哪一年发现氧气?").seeds] == ["约瑟夫·普利斯特里"]


def test_the_walk_reaches_a_second_passage_through_a_shared_chinese_entity() -> None:
    docs = [_chunk("sched", "调度器负责把任务分配给工作节点。调度器每五分钟运行一次。工作节点的日志写入磁盘。"),
            _chunk("nodes", "工作节点每秒向集群发送心跳。工作节点在心跳中断后被标记为离线。"),
            _chunk("other", "数据库每天凌晨备份一次。备份文件保存三十天。")]
    index = ChunkIndex(RetrievalSettings(embedder="none"), embedder=None)
    index.add(docs)
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract(docs).extractions)
    walk = walk_for_index(GraphSnapshot(tuple(entities), tuple(relations)), index)
    link = walk.link("调度器把任务分配给谁？")
    assert [s.name for s in link.seeds] == ["调度器"]
    index.graph_walk = walk
    ranked = [h.document_id for h in index.search("调度器把任务分配给谁？", 3, graph_weight=1.0)]
    assert ranked[:2] == ["sched", "nodes"], ranked  # the node passage, reached through 工作节点
    assert "工作节点" in walk.neighbours([link.seeds[0].entity_id])


def test_polish_names_are_one_entity_in_their_base_form_and_questions_link_them() -> None:
    texts = ("Jan Kowalski kieruje zespołem w Warszawie.", "Biuro z Warszawy przeniesiono w 2016 roku.",
             "Stolicą Polski jest Warszawa.")
    merged = [n for n, _ in _entities(*texts)]
    assert merged.count("Warszawa") == 3 and "Warszawie" not in merged and "Warszawy" not in merged
    written = [n for n, _ in _entities(*texts, base_forms=False)]
    assert {"Warszawie", "Warszawy", "Warszawa"} <= set(written)  # the peer: every case its own entity
    lexicon = EntityLexicon([KnownEntity("Warszawa", "name", 3)], 10)
    assert [e.name for e in lexicon.find("Kto kieruje zespołem w Warszawie?")] == ["Warszawa"]


def test_a_polish_name_the_dictionary_does_not_know_is_given_its_base_form_by_its_ending() -> None:
    """Borrowed names inflect as the dictionary's own names do: the rules its names teach give their base form,
    so their cases are one entity, and a question in another case links it."""
    from core.text.lemma import polish_lemma, polish_name
    from core.text.polish_endings import guess_lemma

    assert polish_lemma("Macmillana") is None and polish_lemma("Nasserem") is None  # not in the dictionary
    assert [guess_lemma(w) for w in ("Macmillana", "Macmillanem", "Macmillan", "Nasserem", "Montiniego")] == [
        "Macmillan", "Macmillan", "Macmillan", "Nasser", "Montini"]
    assert guess_lemma("macmillana") == "macmillana" and guess_lemma("X11a") == "X11a"  # a capitalized word only
    assert polish_name("Harolda Macmillana") == "Harold Macmillan"
    texts = ("W 1957 partia wybrała Macmillana na premiera.", "Rząd kierowany przez Macmillana upadł w 1963 roku.",
             "Prezydent rozmawiał wtedy z Macmillanem.")
    merged = [n for n, _ in _entities(*texts)]
    assert merged.count("Macmillan") == 3 and not {"Macmillana", "Macmillanem"} & set(merged), merged
    # Its guessed base form merges the cases but is no name to show: the entity is named as the text writes it.
    from retrieval.lexicon import lexicon_for

    others = [f"Dokument numer {i} opisuje pogodę nad morzem." for i in range(40)]  # so that it is no hub
    chunks = [_chunk(f"d{i}", t) for i, t in enumerate(texts + tuple(others))]
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract(chunks).extractions)
    assert [(e.name, len(e.chunk_ids)) for e in entities if "Macmillan" in e.name] == [("Macmillana", 3)]
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(chunks)
    graph = GraphSnapshot(tuple(entities), tuple(relations))
    lexicon = lexicon_for(graph, index)
    walk = walk_for_index(graph, index)
    for question in ("Kiedy Macmillan zrezygnował?", "Co stało się z Macmillanem?"):  # cases the text wrote once or never
        assert [e.name for e in lexicon.find(question)] == ["Macmillana"], question
        assert [s.name for s in walk.link(question).seeds] == ["Macmillana"], question
    # A borrowed name in its nominative keeps its letters ("Biden", not a case of "Bidno"); a short word is left whole.
    assert [guess_lemma(w) for w in ("Biden", "Bidenem", "Bedford", "Joe", "Abu")] == ["Biden", "Biden", "Bedford",
                                                                                     "Joe", "Abu"]


def test_a_polish_name_is_named_as_the_text_writes_it_and_found_in_any_case(tmp_path) -> None:
    """Merged by base form, named by the written form with the most words in their base form: the words of
    "Polskiej Akademii Nauk" lemmatized one by one give "Polska Akademia Nauka", which is no name (the genitive
    "Nauk" belongs), and "Zjednoczonym Królestwie" gives "Zjednoczyć Królestwo". A question in another case still
    finds the entity, through the base form the lexicon keeps beside the name, also once saved and loaded."""
    from retrieval.lexicon import lexicon_for

    texts = ("Polska Akademia Nauk ma siedzibę w Warszawie.", "Rok temu członkowie Polskiej Akademii Nauk spotkali "
             "się w Krakowie.", "W tym roku obrady Polskiej Akademii Nauk trwały dwa dni.")
    others = [f"Dokument numer {i} opisuje pogodę nad morzem." for i in range(40)]  # so that it is no hub
    chunks = [_chunk(f"d{i}", t) for i, t in enumerate(texts + tuple(others))]
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract(chunks).extractions)
    names = {e.name: len(e.chunk_ids) for e in entities}
    assert names.get("Polska Akademia Nauk") == 3, names  # one entity, named as written in the nominative
    assert names.get("Kraków") == 1 and "Krakowie" not in names  # one word: its base form is a word
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(chunks)
    lexicon = lexicon_for(GraphSnapshot(tuple(entities), tuple(relations)), index)
    lexicon.save(tmp_path / "entities.json")
    for lex in (lexicon, EntityLexicon.load(tmp_path / "entities.json")):
        assert [e.name for e in lex.find("Gdzie spotkali się członkowie Polskiej Akademii Nauk?")] == ["Polska Akademia Nauk"]
    walk = walk_for_index(GraphSnapshot(tuple(entities), tuple(relations)), index)
    seeds = walk.link("Gdzie spotkali się członkowie Polskiej Akademii Nauk?").seeds
    assert [s.name for s in seeds if s.matched.startswith("Polskiej")] == ["Polska Akademia Nauk"], seeds


def test_titles_join_names_in_the_corpus_language() -> None:
    """No English glue words between Chinese (or Polish) names: punctuation, which reads in any language."""
    import re

    from communities.titles import extractive_title
    from core.records import Entity
    from core.text.glue import ENGLISH, glue_for

    zh = [Entity(f"e{i}", n, "concept", "", ("c#0000",)) for i, n in enumerate(["调度器", "工作节点", "心跳"])]
    glue = glue_for(["调度器负责把任务分配给工作节点。工作节点每秒发送心跳。"])
    title = extractive_title(zh, [], "fallback", glue=glue)
    assert title == "调度器：工作节点、心跳" and not re.search(r"[A-Za-z]", title)
    pl = [Entity(f"p{i}", n, "name", "", ("c#0000",)) for i, n in enumerate(["Warszawa", "Kraków", "Gdańsk"])]
    title = extractive_title(pl, [], "fallback", glue=glue_for(["Jan Kowalski kieruje zespołem w Warszawie i "
                                                                 "jest z Krakowa, ale nie z Gdańska."]))
    assert title == "Warszawa: Kraków, Gdańsk"
    en = [Entity(f"n{i}", n, "name", "", ("c#0000",)) for i, n in enumerate(["Scrooge", "Bob Cratchit", "Fred"])]
    assert extractive_title(en, [], "fallback", glue=ENGLISH) == "Scrooge with Bob Cratchit and Fred"


def test_a_latin_name_in_chinese_text_ends_where_the_han_characters_begin() -> None:
    """Chinese writes no space between words: a name in Latin letters stops at the first Han character, so neither
    a particle ("DECnet是") nor a clause ("Internet2正式退役Abilene") is glued to it."""
    names = {n for n, _ in _entities("2006年，Internet2正式退役Abilene网络。DECnet是一种协议，DECnet曾被广泛使用。")}
    assert {"Internet2", "Abilene", "DECnet"} <= names
    assert not any(any("\u4e00" <= ch <= "\u9fff" for ch in n) and any(ch.isascii() and ch.isalpha() for ch in n)
                   for n in names), names


def test_a_name_written_as_a_polish_mention_writes_it_is_that_entity() -> None:
    # A page's title is read as written ("Wiktoria Hanowerska"); its mentions in the text are merged by their base
    # form, which lemmatizes the adjective to the masculine. The title and the text name one entity.
    from extraction.types import ChunkExtraction, EntityMention

    title = ChunkExtraction("d#0000", (EntityMention("Wiktoria Hanowerska", "name", "the title of d"),), ())
    text = ChunkExtraction("d#0001", (EntityMention("Wiktoria Hanowerski", "name", "Wiktoria Hanowerska rządziła.",
                                                    "Wiktoria Hanowerska"),), ())
    other = ChunkExtraction("e#0000", (EntityMention("Wiktoria Hanowerski", "name", "O Wiktorii Hanowerskiej.",
                                                     "Wiktorii Hanowerskiej"),), ())
    entities, _ = resolve([title, text, other])
    assert [(e.name, len(e.chunk_ids)) for e in entities] == [("Wiktoria Hanowerska", 3)]


def test_a_capital_that_opening_a_clause_gives_is_no_part_of_a_name() -> None:
    """A word the corpus writes in lower case ("w", "według") is capitalized by its position when it opens a
    sentence, so "W Europie" names Europa (one entity with "w Europie") and "Według Jana Nowaka" names Jan Nowak, judged by the corpus's word model or, without one, by the document; a first word the text also
    writes capitalized mid-sentence ("the Royal Navy") stays part of the name."""
    from extraction.wordlike import WordModel

    texts = ("W Europie panowała zaraza. Zaraza w Europie zabiła miliony, a w Azji mniej.",
             "Według Jana Nowaka było to w 1348 roku, według kronik.",
             "Royal Navy ships sailed. Ships of the Royal Navy met a royal yacht and the royal guard.")
    chunks = [_chunk(f"d{i}", t) for i, t in enumerate(texts)]
    for words in (WordModel.of_texts(texts * 20), None):
        result = OfflineExtractor(ExtractionSettings(), words).extract(chunks)
        names = [[e.name for e in ex.entities] for ex in result.extractions]
        assert names[0] == ["Europa", "Azja"], names
        assert names[1] == ["Jan Nowak"], names
        assert names[2] == ["Royal Navy"], names  # "Ships of the Royal Navy" opens its sentence


def test_the_corpus_says_which_opening_capitals_are_names() -> None:
    """The word model counts each word's lower-case uses against its capitalized ones after a lower-case word, and
    which capitalized words follow it there: the corpus writes "west" mostly in lower case, but "in West Virginia"
    names the pair, so "West Virginia" opening a sentence stays whole even in a document that writes only "the
    west"; "w" is all lower case, so "W Europie" starts at Europie. A table's pipe between two words is no
    mid-sentence gap."""
    from extraction.wordlike import WordModel

    corpus = ("Coal came from the west of the state. Miners moved west, to the west. Zaraza w Europie i w Azji "
              "trwała w średniowieczu. | the listener | Enables the port |") * 30 + " They lived in West Virginia."
    words = WordModel.of_texts([corpus])
    assert words.capitalized_by_position("West", "Coast")  # 90 uses in lower case, one capitalized
    assert ("west", "virginia") in words.pairs and not words.capitalized_by_position("West", "Virginia")
    assert words.capitalized_by_position("W", "Europie")
    assert words.capital.get("enables", 0) == 0  # "listener | Enables": a cell's border, not a sentence
    texts = ("West Virginia is a state. The west of it is hilly.", "W Europie panowała zaraza, a w Azji mniej.")
    result = OfflineExtractor(ExtractionSettings(), words).extract([_chunk(f"d{i}", t) for i, t in enumerate(texts)])
    names = [[e.name for e in ex.entities] for ex in result.extractions]
    assert names == [["West Virginia"], ["Europa", "Azja"]], names
