// Every entry of the owner, with its tokens and entities: what a process copies to search
// a large user in memory (graphmem.backends._replica). One row per entry; the copy is
// kept only when the owner's stamp (user_stamp.cypher) is the same before and after this
// read, so no write committed while it ran.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
RETURN e.id AS id, e.project_id AS project_id, e.session_id AS session_id, e.position AS position,
       e.author AS author, e.role AS role, e.text AS text, e.timestamp AS timestamp,
       e.language AS language, e.time_refs AS time_refs,
       [(e)-[:HAS_TOKEN]->(t) | t.value] AS tokens,
       [(e)-[:MENTIONS]->(n) | [n.name, n.label]] AS entities
