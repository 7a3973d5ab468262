"""Every Cypher statement Strata runs, as named constants.

All values travel as parameters; no user text is ever spliced into query text. Writes are batched with
``UNWIND $rows AS row`` and MERGE on fixed labels with unique keys.
"""

CONSTRAINTS = (
    "CREATE CONSTRAINT strata_document_id IF NOT EXISTS FOR (n:Document) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT strata_chunk_id IF NOT EXISTS FOR (n:Chunk) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT strata_entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT strata_community_id IF NOT EXISTS FOR (n:Community) REQUIRE n.id IS UNIQUE",
)

# The description merge mirrors the embedded store: keep the old text when it already holds the new one.
_MERGE_DESCRIPTION = (
    "CASE WHEN coalesce({v}.description, '') = '' THEN row.description "
    "WHEN row.description = '' OR {v}.description CONTAINS row.description THEN {v}.description "
    "ELSE left({v}.description + '\\n' + row.description, 4000) END"
)

UPSERT_DOCUMENTS = """
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
SET d.source = row.source, d.content_hash = row.content_hash, d.metadata = row.metadata
"""

UPSERT_CHUNKS = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
MERGE (c:Chunk {id: row.id})
SET c.document_id = row.document_id, c.ordinal = row.ordinal, c.text = row.text, c.start = row.start,
    c.end = row.end, c.n_tokens = row.n_tokens, c.source = row.source, c.content_hash = row.content_hash,
    c.metadata = row.metadata
MERGE (d)-[:HAS_CHUNK]->(c)
"""

UPSERT_ENTITIES = f"""
UNWIND $rows AS row
MERGE (e:Entity {{id: row.id}})
SET e.name = row.name, e.type = row.type, e.description = {_MERGE_DESCRIPTION.format(v='e')}
WITH e, row
UNWIND row.chunk_ids AS cid
MATCH (c:Chunk {{id: cid}})
MERGE (e)-[:MENTIONED_IN]->(c)
"""

# Chunk ids are checked with an index lookup each, without grouping the batch; ON CREATE / ON MATCH read and
# write the relationship in one step, so the batch streams through without an eager barrier. (Repeats of an id
# within one batch are folded by the caller: every row's MERGE sees the others, but not their SETs.)
UPSERT_RELATIONS = f"""
UNWIND $rows AS row
MATCH (a:Entity {{id: row.source_id}})
MATCH (b:Entity {{id: row.target_id}})
WITH row, a, b, [cid IN row.chunk_ids WHERE EXISTS {{ MATCH (:Chunk {{id: cid}}) }}] AS valid
MERGE (a)-[r:RELATED {{id: row.id}}]->(b)
ON CREATE SET r.description = row.description, r.chunk_ids = valid, r.weight = toFloat(size(valid))
ON MATCH SET r.description = {_MERGE_DESCRIPTION.format(v='r')},
    r.chunk_ids = r.chunk_ids + [x IN valid WHERE NOT x IN r.chunk_ids],
    r.weight = toFloat(size(r.chunk_ids + [x IN valid WHERE NOT x IN r.chunk_ids]))
"""

SAVE_EXTRACTIONS = """
UNWIND $rows AS row
MATCH (c:Chunk {id: row.id})
SET c.extraction = row.payload
"""

READ_EXTRACTIONS = "MATCH (c:Chunk) WHERE c.extraction IS NOT NULL RETURN c.id AS id, c.extraction AS payload ORDER BY id"

SET_ENTITY_ATTRIBUTES = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.name = row.name, e.type = row.type, e.description = row.description
"""

SET_RELATION_DESCRIPTIONS = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source_id})-[r:RELATED {id: row.id}]->(:Entity {id: row.target_id})
SET r.description = row.description
"""

DOCUMENT_CHUNK_IDS = "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk) RETURN collect(c.id) AS ids"

TOUCHED_ENTITIES = """
MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) WHERE c.id IN $ids
WITH collect(DISTINCT e) AS mentioned
UNWIND mentioned AS e
OPTIONAL MATCH (e)-[r:RELATED]-(other:Entity) WHERE any(x IN r.chunk_ids WHERE x IN $ids)
WITH collect(DISTINCT e.id) + collect(DISTINCT other.id) AS ids
UNWIND ids AS id
RETURN collect(DISTINCT id) AS touched
"""

MARK_COMMUNITIES_STALE = """
MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community)
WHERE e.id IN $touched AND c.fingerprint IS NOT NULL AND coalesce(c.stale, false) = false
WITH DISTINCT c
SET c.stale = true
RETURN count(c) AS marked
"""

PRUNE_RELATION_CHUNKS = """
MATCH (e:Entity)-[r:RELATED]-() WHERE e.id IN $touched
WITH DISTINCT r
SET r.chunk_ids = [x IN r.chunk_ids WHERE NOT x IN $ids]
SET r.weight = toFloat(size(r.chunk_ids))
WITH r WHERE size(r.chunk_ids) = 0
DELETE r
RETURN count(*) AS removed
"""

DELETE_CHUNKS = "MATCH (c:Chunk) WHERE c.id IN $ids DETACH DELETE c"

COUNT_ORPHANS = """
MATCH (e:Entity) WHERE e.id IN $touched AND NOT (e)-[:MENTIONED_IN]->(:Chunk)
OPTIONAL MATCH (e)-[r:RELATED]-()
RETURN count(DISTINCT e) AS entities, count(DISTINCT r) AS relations
"""

DELETE_ORPHANS = "MATCH (e:Entity) WHERE e.id IN $touched AND NOT (e)-[:MENTIONED_IN]->(:Chunk) DETACH DELETE e"

DELETE_DOCUMENT = "MATCH (d:Document {id: $id}) DETACH DELETE d"

DOCUMENT_SOURCES = "MATCH (d:Document) RETURN d.id AS id, d.source AS source ORDER BY id"

DOCUMENT_HASHES = "MATCH (d:Document) RETURN d.id AS id, d.content_hash AS hash ORDER BY id"

GET_CHUNKS = "UNWIND $ids AS cid MATCH (c:Chunk {id: cid}) RETURN c"

ALL_CHUNKS = "MATCH (c:Chunk) RETURN c ORDER BY c.document_id, c.ordinal"

# The whole graph in one record per entity, with its mentions and its outgoing relations as lists: a quarter
# of the records that one per entity and one per relation would take (the driver's cost is per record).
READ_GRAPH = """
MATCH (e:Entity)
RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description,
       [(e)-[:MENTIONED_IN]->(c:Chunk) | c.id] AS chunk_ids,
       [(e)-[r:RELATED]->(b:Entity) | [r.id, b.id, r.description, r.chunk_ids]] AS related
"""

# A community that is gone loses its place in the hierarchy but keeps its report (for the drift report) until
# the report is deleted; report-only nodes have no level.
DROP_GONE_COMMUNITIES = """
MATCH (c:Community) WHERE NOT c.id IN $keep
OPTIONAL MATCH (c)-[l]-()
DELETE l
WITH DISTINCT c
REMOVE c.level, c.parent_id
WITH c WHERE c.fingerprint IS NULL
DELETE c
"""

DELETE_REPORTS = """
UNWIND $ids AS cid
MATCH (c:Community {id: cid})
REMOVE c.title, c.summary, c.findings, c.rating, c.fingerprint, c.mode, c.model, c.created_at, c.stale, c.inputs, c.report_level
WITH c WHERE c.level IS NULL
DETACH DELETE c
"""

CLEAR_COMMUNITY_LINKS = """
MATCH (c:Community)
OPTIONAL MATCH (c)<-[m:IN_COMMUNITY]-()
OPTIONAL MATCH (c)-[p:CHILD_OF]->()
DELETE m, p
"""

UPSERT_COMMUNITIES = """
UNWIND $rows AS row
MERGE (c:Community {id: row.id})
SET c.level = row.level, c.parent_id = row.parent_id
WITH c, row
UNWIND row.entity_ids AS eid
MATCH (e:Entity {id: eid})
MERGE (e)-[:IN_COMMUNITY]->(c)
"""

LINK_COMMUNITY_PARENTS = """
UNWIND $rows AS row
MATCH (c:Community {id: row.id})
MATCH (p:Community {id: row.parent_id})
MERGE (c)-[:CHILD_OF]->(p)
"""

READ_COMMUNITIES = """
MATCH (c:Community) WHERE c.level IS NOT NULL
OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c)
RETURN c.id AS id, c.level AS level, c.parent_id AS parent_id, collect(e.id) AS entity_ids
ORDER BY level, id
"""

SAVE_REPORTS = """
UNWIND $rows AS row
MERGE (c:Community {id: row.community_id})
SET c.report_level = row.level, c.title = row.title,
    c.summary = row.summary, c.findings = row.findings, c.rating = row.rating, c.fingerprint = row.fingerprint,
    c.mode = row.mode, c.model = row.model, c.created_at = row.created_at, c.stale = row.stale, c.inputs = row.inputs
"""

READ_REPORTS = """
MATCH (c:Community) WHERE c.fingerprint IS NOT NULL
RETURN c.id AS community_id, c.report_level AS level, c.title AS title, c.summary AS summary,
       c.findings AS findings, c.rating AS rating, c.fingerprint AS fingerprint, c.mode AS mode, c.model AS model,
       c.created_at AS created_at, coalesce(c.stale, false) AS stale, coalesce(c.inputs, '') AS inputs
ORDER BY level, community_id
"""

COUNTS = """
CALL { MATCH (n:Document) RETURN count(n) AS documents }
CALL { MATCH (n:Chunk) RETURN count(n) AS chunks }
CALL { MATCH (n:Entity) RETURN count(n) AS entities }
CALL { MATCH ()-[r:RELATED]->() RETURN count(r) AS relations }
CALL { MATCH (n:Community) WHERE n.level IS NOT NULL RETURN count(n) AS communities }
CALL { MATCH (n:Community) WHERE n.fingerprint IS NOT NULL RETURN count(n) AS reports }
RETURN documents, chunks, entities, relations, communities, reports
"""

CLEAR_BATCH = """
MATCH (n) WHERE n:Document OR n:Chunk OR n:Entity OR n:Community
WITH n LIMIT 10000
DETACH DELETE n
RETURN count(*) AS removed
"""

# The naive path, for the write benchmark only: one statement and one transaction per relation.
NAIVE_MERGE_RELATION = """
MATCH (a:Entity {id: $source_id}) MATCH (b:Entity {id: $target_id})
MERGE (a)-[r:RELATED {id: $id}]->(b)
SET r.description = $description, r.chunk_ids = $chunk_ids, r.weight = toFloat(size($chunk_ids))
"""
