from retrieval.router import EntityLexicon, KnownEntity, route_question

LEX = EntityLexicon([KnownEntity("Jordan Hayes", "name", 3), KnownEntity("Alex Mercer", "name", 15),
                     KnownEntity("billing-service", "service", 2)], total_chunks=18)


def test_identifiers_and_specific_entities_go_local() -> None:
    d = route_question("Why did billing-service return HTTP 504?", LEX)
    assert d.route == "local" and "HTTP 504" in d.identifiers
    assert route_question("Who is Jordan Hayes?", LEX).route == "local"


def test_whole_corpus_questions_go_global() -> None:
    d = route_question("What are the main themes of the whole story?", LEX)
    assert d.route == "global" and any("corpus as a whole" in r for r in d.reasons)
    assert route_question("Summarize the recurring problems across all services", LEX).route == "global"


def test_cue_word_with_identifier_stays_local() -> None:
    assert route_question("Across all regions, which config sets max_connections to 500?", LEX).route == "local"


def test_global_unavailable_without_reports() -> None:
    d = route_question("What are the main themes?", LEX, has_reports=False)
    assert d.route == "local" and any("unavailable" in r for r in d.reasons)
