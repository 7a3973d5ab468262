import json
from dataclasses import replace

from core.text.names import find_entities
from extraction.offline import OfflineExtractor
from core.text.keys import normalize_name
from extraction.resolution import resolve
from extraction.types import ChunkExtraction, EntityMention, RelationMention
from core.records import Chunk
from core.settings import ExtractionSettings


def names(sentence: str) -> dict[str, str]:
    return {f.name: f.type for f in find_entities(sentence)}


def test_infrastructure_identifiers() -> None:
    found = names("The billing-service returned HTTP 504 when max_connections on PostgreSQL 15.4.1 ran out; "
                  "see ERR_CONN_RESET, db.pool.size and retry_with_backoff().")
    assert found["billing-service"] == "service"
    assert found["HTTP 504"] == "error_code"
    assert found["max_connections"] == "config_key"
    assert found["PostgreSQL"] == "database"
    assert found["15.4.1"] == "version"
    assert found["ERR_CONN_RESET"] == "error_code"
    assert found["db.pool.size"] == "config_key"
    assert "retry_with_backoff()" in found


def test_names_in_prose_and_cjk() -> None:
    assert {"Scrooge", "Ghost of Christmas Past", "Bob Cratchit"} <= set(names("When Scrooge saw the Ghost of Christmas Past, Bob Cratchit wept."))
    assert "Mrs. Cratchit" in names("Mrs. Cratchit said nothing.")
    assert "When" not in names("When it rained, nothing happened.")
    assert {"张伟", "李娜", "北京", "阿里巴巴"} <= set(names("张伟和李娜在北京的阿里巴巴。"))


def test_relations_by_sentence_cooccurrence() -> None:
    chunk = Chunk("d#0000", "d", 0, "The billing-service depends on Redis. Nothing else here.", 0, 50, 9, "d", "h")
    ex = OfflineExtractor(ExtractionSettings()).extract_chunk(chunk)
    assert {e.name for e in ex.entities} == {"billing-service", "Redis"}
    assert ex.relations[0].description == "billing-service depends on Redis"


def test_resolution_merges_across_chunks_and_keeps_identifiers_apart() -> None:
    assert normalize_name("The Cratchits's", "name") == normalize_name("the cratchit", "name")
    assert normalize_name("max_connections", "config_key") != normalize_name("max_connection", "config_key")
    exs = [
        ChunkExtraction("c1", (EntityMention("Redis", "database", "a cache"), EntityMention("billing-service", "service", "x")),
                        (RelationMention("billing-service", "Redis", "uses"),)),
        ChunkExtraction("c2", (EntityMention("redis", "database", "evicts keys"), EntityMention("billing-service", "service", "x")),
                        (RelationMention("Redis", "billing-service", "reads"),)),
    ]
    entities, relations = resolve(exs)
    redis = next(e for e in entities if e.name.lower() == "redis")
    assert redis.chunk_ids == ("c1", "c2") and "a cache" in redis.description and "evicts keys" in redis.description
    assert len(relations) == 1 and relations[0].chunk_ids == ("c1", "c2")


def test_sentence_opening_words_are_entities_only_when_they_recur_mid_sentence() -> None:
    text = ("Operation: Dulce began at dawn near the base at Dulce. Connection attempts failed on the billing-service. "
            "Latency recovered. Alex Mercer checked the logs. Alex nodded. "
            "\"Focus, people,\" said Taylor. I've seen worse, said Jordan. Later Jordan left with Taylor.")
    chunk = Chunk("d#0000", "d", 0, text, 0, len(text), 60, "d", "h")
    names = {e.name for e in OfflineExtractor(ExtractionSettings()).extract([chunk]).extractions[0].entities}
    assert {"Dulce", "Alex Mercer", "Alex", "Taylor", "Jordan", "billing-service"} <= names
    assert not names & {"Operation", "Connection", "Latency", "Focus", "I've"}


def test_an_api_references_type_annotations_and_remarks_do_not_make_the_next_word_a_name() -> None:
    text = ("### Options\n\n"
            "* `callback` {Function} (optional) Invoked when the request has completed.\n"
            "* `onError` {Function} Invoked with the error, if any.\n"
            "* `maxRetries` {number} Maximum number of retries before the Dispatcher gives up.\n\n"
            "Lothair II (835-869) Emperor Lothair's son held Lotharingia; the Dispatcher retries for Lothair II.\n")
    chunk = Chunk("api#0000", "api", 0, text, 0, len(text), 60, "api.md", "h")
    names = {e.name for e in OfflineExtractor(ExtractionSettings()).extract_chunk(chunk).entities}
    assert not names & {"Function", "Invoked", "Maximum"}, names
    assert {"Dispatcher", "Lothair II"} <= names, names


def test_words_capitalized_by_position_in_headings_and_table_cells_give_no_evidence_of_a_name() -> None:
    # "Main", "Enable" and "Defines" open every cell they are in; a title-case heading, a run opening a cell
    # ("Enable Consul Connect") and a cell opening with a remark ("(Deprecated) Defines") are no mid-sentence uses.
    text = ("#### Main Service Options\n\n"
            "| Field | Description |\n| --- | --- |\n"
            "| `service` | Main service to forward requests to. |\n"
            "| `connect` | Enable Consul Connect support. |\n"
            "| `tracing` | Enable tracing for the router. |\n"
            "| `delay` | (Deprecated) Defines the delay before checks. |\n"
            "| `attrs` | Defines additional resource attributes. |\n\n"
            "Set `connect` to enable it; the main router reads it from Consul.\n")
    chunk = Chunk("cfg#0000", "cfg", 0, text, 0, len(text), 80, "cfg.md", "h")
    names = {e.name for e in OfflineExtractor(ExtractionSettings()).extract([chunk]).extractions[0].entities}
    assert not names & {"Main", "Enable", "Defines"}, names
    assert "Consul" in names, names


def test_a_title_case_heading_or_line_names_only_what_the_text_writes_as_a_name_elsewhere() -> None:
    from extraction.wordlike import WordModel

    text = ("## Step 2: Install Traefik Alongside NGINX\n\n"
            "Spread the Word & Tell Us About It\n\n"
            "## Access Control\n\n"
            "## Traefik Proxy\n\n"
            "## Open **Traefik’s** Dashboard With Helm\n\n"
            "- Jan Kowalski Founded The Company\n\n"
            "We install the chart next to NGINX, then check that Traefik answers. Access control rules stay. "
            "Install Traefik with the chart, and Helm too.\n")
    prose = ("You install it, then tell us about the word; it spreads the word, step by step, alongside the rest. "
             "You open the dashboard with the chart: we founded the company. ")
    corpus = WordModel.of_texts([text, prose * 40])
    extraction = OfflineExtractor(ExtractionSettings(), corpus).extract(
        [Chunk("t#0000", "t", 0, text, 0, len(text), 80, "t.md", "h")]).extractions[0]
    names = {e.name for e in extraction.entities}
    # a run mixing names with words the text writes in lower case gives the names; a run with no word in lower
    # case elsewhere stays whole; the whole heading names its section; a clause in title case is no name; a
    # prose sentence opening with the heading's words ("Install Traefik with ...") is no use of it as a name
    assert {"Traefik", "NGINX", "Traefik Proxy", "Access Control", "Helm", "Jan Kowalski"} <= names, names
    assert not names & {"Install Traefik Alongside NGINX", "Traefik Alongside NGINX", "Tell Us About It", "Tell Us",
                        "Word", "Step", "Spread", "Install Traefik", "Traefik’s", "Open Traefik’s Dashboard With Helm",
                        "Jan Kowalski Founded The Company"}, names
    # the names keep their places in the heading, emphasis and all, so what a relation quotes reads right
    quoted = [r.description for r in extraction.relations if (r.source, r.target) == ("Traefik", "Helm")]
    assert "Traefik’s Dashboard With Helm" in quoted, quoted
    # the same lines' capitals are no evidence of a name in the corpus's counts either
    styled = WordModel.of_texts(["## Restart the Workers\n\nSpread the Word & Tell Us About It\n"])
    assert not styled.capital, styled.capital


def test_a_sentence_in_capitals_names_only_what_the_prose_writes_as_a_name_elsewhere() -> None:
    from core.text.names import upper_case_line
    from extraction.wordlike import WordModel

    # a licence's disclaimer shouts every word: its capitals say nothing, so "INCLUDING", "DATA" (an acronym's
    # shape) and "COPYRIGHT HOLDERS" are no names; "MKDOCS", which the prose writes as a name, stays one
    text = ("Redistribution of the software must keep the copyright notice, including the data it holds.\n\n"
            "THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS \"AS IS\" AND ANY WARRANTIES, INCLUDING, BUT NOT\n"
            "LIMITED TO, LOSS OF USE, DATA, OR PROFITS ARE DISCLAIMED, AS MKDOCS SAYS.\n")
    prose = "You build the site with MkDocs, and MkDocs serves it; the software keeps its data. "
    corpus = WordModel.of_texts([text, prose * 20])
    names = {e.name for e in OfflineExtractor(ExtractionSettings(), corpus).extract(
        [Chunk("l#0000", "l", 0, text, 0, len(text), 60, "license.md", "h")]).extractions[0].entities}
    assert "MKDOCS" in names, names
    assert not names & {"SOFTWARE", "COPYRIGHT HOLDERS", "INCLUDING", "LIMITED", "DATA", "LOSS", "PROFITS",
                        "DISCLAIMED", "WARRANTIES"}, names
    # a shouted clause shouts its ordinary words too; a list or a row of acronyms does not, nor does prose naming
    # a few, nor a sentence of a script without case
    lower = {"in", "no", "the", "be", "and", "or"}
    assert upper_case_line("IN NO EVENT SHALL THE AUTHORS BE LIABLE.", lower=lower)
    assert not upper_case_line("IN NO EVENT SHALL THE AUTHORS BE LIABLE.")  # no word known in lower case
    for line in ("| GET | PUT | DELETE |", "Protocols: HTTP, HTTPS, TCP, UDP.", "- AWS, GCP, OCI",
                 "The API speaks HTTP and TLS to the server.", "本网关支持HTTP、HTTPS、TCP和UDP。",
                 "このサービスは、HTTP、HTTPS、TCP、UDPに対応しています。"):
        assert not upper_case_line(line, lower=lower | {"protocols"}), line
    # acronyms listed in a Chinese sentence stay names
    zh = "本网关支持HTTP、HTTPS、TCP和UDP。网关很快。"
    zh_names = {e.name for e in OfflineExtractor(ExtractionSettings(), corpus).extract(
        [Chunk("z#0000", "z", 0, zh, 0, len(zh), 10, "z.md", "h")]).extractions[0].entities}
    assert {"HTTP", "HTTPS", "TCP", "UDP"} <= zh_names, zh_names


def test_a_common_word_opening_a_name_is_given_back_where_the_prose_writes_it_capitalized_before_the_name() -> None:
    from extraction.wordlike import WordModel

    # "New" and "The" open clauses, where the name finder cuts a common word; the corpus writes "in New York" and
    # "in The Hague", so they are the names' own; "New" before "Features" and "The" before "Ghost" are not
    text = ("## New York City\n\nNew York City opens late. The Hague hosts the court. New Features arrive daily. "
            "The Ghost came back, and the Ghost spoke.\n")
    prose = "We moved to New York and then to The Hague, where the new features of the court are shown. "
    corpus = WordModel.of_texts([text, prose * 20])
    names = {e.name for e in OfflineExtractor(ExtractionSettings(), corpus).extract(
        [Chunk("n#0000", "n", 0, text, 0, len(text), 40, "n.md", "h")]).extractions[0].entities}
    assert {"New York City", "The Hague", "Ghost"} <= names, names
    assert not names & {"York City", "Hague", "New Features", "The Ghost"}, names
    # a date once before a name is no part of it, and a table's cells are apart
    text2 = "Monday Google announced a deal.\n\n| Office | Place |\n|---|---|\n| New | York City |\n"
    corpus2 = WordModel.of_texts([text2, prose * 20 + "On Monday Google said so. "])
    names2 = {e.name for e in OfflineExtractor(ExtractionSettings(), corpus2).extract(
        [Chunk("m#0000", "m", 0, text2, 0, len(text2), 20, "m.md", "h")]).extractions[0].entities}
    assert not names2 & {"Monday Google", "New York City"}, names2
    # without a corpus to tell, the finder's cut stands
    alone = {e.name for e in OfflineExtractor(ExtractionSettings()).extract(
        [Chunk("n#0000", "n", 0, text, 0, len(text), 40, "n.md", "h")]).extractions[0].entities}
    assert "New York City" not in alone, alone


def test_headings_in_sentence_case_keep_their_capitals_and_a_short_item_is_no_title_case_line() -> None:
    from extraction.wordlike import WordModel

    # this page writes its headings in sentence case ("Życie i twórczość", "Nagrody i wyróżnienia"): a capital
    # there is the word's own, as in prose
    text = ("# Historia uczelni\n\nUczelnia ma długą historię, a jej twórczość i nagrody są znane.\n\n"
            "## Historia Uniwersytetu Jagiellońskiego\n\nTo rektor Uniwersytetu Jagiellońskiego mówi.\n\n"
            "## Życie i twórczość\n\nTwórczość rektora jest znana.\n\n## Nagrody i wyróżnienia\n\nNagrody są liczne.\n\n"
            "- Deploys to Google Cloud\n\n"
            + "To jest tekst, a w nim są słowa, które się w nim powtarzają i są w nim na to, by tak było. " * 6)
    corpus = WordModel.of_texts([text, "historia uczelni i jej historia to długa historia. The cloud is big. " * 20])
    # (each mention in its base form, and as written: an English name in a Polish text has no Polish base form)
    names = {n for e in OfflineExtractor(ExtractionSettings(), corpus).extract(
        [Chunk("h#0000", "h", 0, text, 0, len(text), 120, "h.md", "h")]).extractions[0].entities
        for n in (e.name, e.written) if n}
    assert "Google Cloud" in names, names  # "Deploys to Google Cloud" writes three words in four capitalized
    assert "Historia Uniwersytet Jagielloński" in names, names


def test_a_run_opening_a_cell_is_no_use_of_its_first_word_when_the_corpus_writes_it_in_lower_case() -> None:
    from extraction.wordlike import WordModel

    text = ("| Option | Description |\n| --- | --- |\n"
            "| `mesh` | Enables Consul Connect support. |\n| `trace` | Enables tracing. |\n")
    chunk = Chunk("opts#0000", "opts", 0, text, 0, len(text), 40, "opts.md", "h")
    alone = {e.name for e in OfflineExtractor(ExtractionSettings()).extract([chunk]).extractions[0].entities}
    assert "Enables" in alone  # this page alone never writes "enables" in lower case
    corpus = WordModel.of_texts([text, "The flag enables tracing, and it enables the mesh. " * 40])
    names = {e.name for e in OfflineExtractor(ExtractionSettings(), corpus).extract([chunk]).extractions[0].entities}
    assert "Enables" not in names, names


def test_a_name_whose_lower_case_form_is_only_part_of_identifiers_still_opens_sentences_as_a_name() -> None:
    from extraction.wordlike import WordModel

    # "consul" is written in lower case only inside "providers.consul.endpoint": no ordinary word, so the run
    # "Consul Catalog" opening a cell is a use of the name, and "Consul" opening sentences stays an entity.
    text = ("| Option | Description |\n| --- | --- |\n| `catalog` | Consul Catalog provider settings. |\n\n"
            "Consul is a service mesh. Consul stores the routes.\n")
    chunk = Chunk("c#0000", "c", 0, text, 0, len(text), 40, "c.md", "h")
    corpus = WordModel.of_texts([text, "Set providers.consul.endpoint to the agent's address, then restart. " * 40])
    names = {e.name for e in OfflineExtractor(ExtractionSettings(), corpus).extract([chunk]).extractions[0].entities}
    assert {"Consul", "Consul Catalog"} <= names, names


def _model_fields(model) -> dict:  # type: ignore[no-untyped-def]
    from dataclasses import fields

    return {f.name: getattr(model, f.name) for f in fields(model)}


def test_the_word_model_read_from_its_cache_is_the_model_of_the_texts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from extraction.word_cache import WordCountCache, cached_word_model
    from extraction.wordlike import WordModel

    texts = ["Scrooge walked to the counting-house. The clerk, Bob Cratchit, kept a small fire. " * 30,
             "Kiedy Marley umarł, Scrooge został sam. Pracował w kantorze przy ulicy Cornhill. " * 20,
             "蒸汽机是一种将热能转换为机械功的装置。瓦特改良了蒸汽机，蒸汽机推动了工业革命。",
             "Set `providers.consul.endpoint` to the agent's address, then restart Traefik."]
    path = tmp_path / "words.sqlite"
    want = _model_fields(WordModel.of_texts(texts))
    assert want["documents"] == 1 and want["recurring_terms"]  # the Chinese counts are in it
    assert _model_fields(cached_word_model(texts, path)) == want  # counted, stored
    assert _model_fields(cached_word_model(texts, path)) == want  # read back
    changed = texts[1:] + ["Fezziwig gave a ball on Christmas Eve, and Scrooge danced at it. " * 10]
    assert _model_fields(cached_word_model(changed, path)) == _model_fields(WordModel.of_texts(changed))
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM counts").fetchone()[0] == len(changed)  # the text gone is forgotten
    db.execute("UPDATE counts SET counts = x'00'")  # rows that hold no counts are counted again
    db.commit()
    db.close()
    assert _model_fields(cached_word_model(changed, path)) == _model_fields(WordModel.of_texts(changed))
    WordCountCache(path, version="other code").close()  # counts made by other code are dropped
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM counts").fetchone()[0] == 0
    db.close()


def test_a_rows_title_line_is_a_heading_so_the_text_under_it_opens_a_sentence(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from core.settings import ChunkingSettings
    from extraction.chunking import chunk_documents
    from extraction.loader import load_folder

    rows = [{"_id": "a", "title": "Civil disobedience",
             "text": "Sometimes the prosecution offers a plea bargain, as in the case of the Camden group."},
            {"_id": "b", "title": "Wiktoria Hanowerska",
             "text": "Rok 1887 Zjednoczone Królestwo spędziło na świętowaniu jubileuszu królowej Wiktorii."},
            {"_id": "c", "title": "Midway, Floyd County, Iowa",
             "text": "Midway is an unincorporated community. Nashua lies north of it."},
            {"_id": "d", "title": "Conan O'Brien", "text": "\"O'Brien\" hosted the show."}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                         encoding="utf-8")
    chunks = chunk_documents(load_folder(tmp_path).documents, ChunkingSettings(chunk_tokens=512, overlap_tokens=0))
    assert [c.text.split("\n")[0] for c in chunks] == ["Civil disobedience", "Wiktoria Hanowerska",
                                                       "Midway, Floyd County, Iowa", "Conan O'Brien"]
    out = OfflineExtractor(ExtractionSettings()).extract(chunks).extractions
    names = [{e.name for e in x.entities} for x in out]
    assert "Camden" in names[0] and "Sometimes" not in names[0]
    assert "Wiktoria" in names[1] and "Rok" not in names[1]
    # A text that opens with a word of its title opens with its subject's name; no name runs across the line.
    assert "Midway" in names[2] and not any("Iowa" in n and "Midway" in n for n in names[2])
    assert "O'Brien" in names[3]  # after a quote, and a word of the title however punctuated
    # The same first line is no heading in a document it does not title: "Sometimes" stands after "disobedience".
    untitled = OfflineExtractor(ExtractionSettings()).extract([replace(c, metadata={}) for c in chunks]).extractions
    assert "Sometimes" in {e.name for e in untitled[0].entities} and "Rok" in {e.name for e in untitled[1].entities}
