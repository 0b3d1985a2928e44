// A bounded neighbourhood (see graphmem._gathering.NeighbourhoodRequest): the owner's
// entries with the ids $around and every entry within $reach (0 to 2) NEXT steps of one,
// each once, matched against the query's $tokens and $entities by reading its own few
// HAS_TOKEN and MENTIONS links; with $holding_only, only those holding one of them. An id
// naming no entry of the owner (any more), or one out of scope, names nothing: in scope are
// global entries, plus those of $project_id when it is not null (postings.cypher may list a
// holder out of scope, see there).
//   candidates  [id, matched tokens, matched entities, project_id, ids one NEXT step
//               away, ids two NEXT steps away, author, null or (with $with_times)
//               [timestamp, time_refs]]; a neighbour is in its entry's session, so in
//               the scope of the entry it was reached from
// Rows are lists, not maps: decoding the answer is much of a search's time.
UNWIND $around AS id
MATCH (s:Entry {id: id})
WHERE s.app_name = $app_name AND s.user_id = $user_id AND (s.project_id IS NULL OR s.project_id = $project_id)
MATCH path = (s)-[:NEXT*0..2]-(e:Entry)
WHERE length(path) <= $reach
WITH DISTINCT e
WITH e,
     [(e)-[:HAS_TOKEN]->(t:Token) WHERE t.value IN $tokens | t.value] AS tokens,
     [(e)-[:MENTIONS]->(n:Entity) WHERE n.name IN $entities | n.name] AS entities
WHERE NOT $holding_only OR size(tokens) + size(entities) > 0
RETURN collect([
  e.id,
  tokens,
  entities,
  e.project_id,
  [(e)-[:NEXT]-(n:Entry) | n.id],
  [(e)-[:NEXT]-(:Entry)-[:NEXT]-(f:Entry) WHERE f <> e | f.id],
  e.author,
  CASE WHEN $with_times THEN [e.timestamp, coalesce(e.time_refs, [])] END
]) AS candidates
