// A full gathering (graphmem._gathering.NeighbourhoodRequest with around = null, reach 0):
// every in-scope entry holding one of the query's $lists.tokens or $lists.entities, with the terms it
// holds. It starts from the query's Token and Entity nodes and never reads entries that
// share no term.
//   candidates   [id, matched tokens, matched entities, project_id, ids one NEXT step
//                away, ids two NEXT steps away, author, null or (with $with_times)
//                [timestamp, time_refs], position]
// Rows are lists, not maps: decoding the answer is much of a search's time. Nothing else
// of an entry is read here; the service fetches only the entries that can make the cut.
// In scope: global entries, plus those of $project_id when it is not null.
CALL () {
  UNWIND $lists.tokens AS value
  MATCH (term:Token {app_name: $app_name, user_id: $user_id, value: value})<-[:HAS_TOKEN]-(e:Entry)
  USING INDEX SEEK term:Token(app_name, user_id, value)
  WHERE e.project_id IS NULL OR e.project_id = $project_id
  RETURN e, value AS token, null AS entity
  UNION ALL
  UNWIND $lists.entities AS name
  MATCH (term:Entity {app_name: $app_name, user_id: $user_id, name: name})<-[:MENTIONS]-(e:Entry)
  USING INDEX SEEK term:Entity(app_name, user_id, name)
  WHERE e.project_id IS NULL OR e.project_id = $project_id
  RETURN e, null AS token, name AS entity
}
WITH e, collect(token) AS tokens, collect(entity) AS entities
RETURN collect([
  e.id, tokens, entities, e.project_id,
  [(e)-[:NEXT]-(n:Entry) | n.id],
  [(e)-[:NEXT]-(:Entry)-[:NEXT]-(f:Entry) WHERE f <> e | f.id],
  e.author,
  CASE WHEN $with_times THEN [e.timestamp, coalesce(e.time_refs, [])] END,
  e.position
]) AS candidates
