// The postings of the given terms, in scope (see graphmem._gathering: the search decides
// which terms' postings to read and what to do with them; this only fetches).
//   token_holders   [token, [element id of each in-scope entry holding it]] for each
//                   of $lists.tokens held; with $with_times each holder is [element id,
//                   timestamp, time_refs]
//   entity_holders  the same for each of $lists.entities mentioned
// A holder is named by its element id, which the server knows without reading the node's
// properties (an entry id is a property: a read per holder, most of this query's work).
// Not id(): deprecated in Neo4j 5. Only entries have HAS_TOKEN and MENTIONS links, so no
// holder's label is read either: without a time and a project, listing a term's holders
// reads nothing of them. neighbourhood.cypher takes these ids back and checks the owner
// and the scope of each (one may name another node by then: ids of deleted nodes are
// reused).
// In scope: global entries, plus those of $project_id when it is not null. When the
// owner's counter (create_entries.cypher) says none of its entries is in a project, every
// holder is in scope and none is checked: reading each holder's project_id was about half
// of this query's time. A holder that a concurrent write put in a project meanwhile may
// then be listed; postings only steer and bound a pruned search (graphmem._gathering),
// and neighbourhood.cypher checks the scope of every holder it expands, so no such entry
// is ever a candidate.
OPTIONAL MATCH (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
WITH coalesce(c.project_entries = 0, false) AS everywhere
CALL (everywhere) {
  UNWIND $lists.tokens AS value
  MATCH (term:Token {app_name: $app_name, user_id: $user_id, value: value})<-[:HAS_TOKEN]-(e)
  USING INDEX SEEK term:Token(app_name, user_id, value)
  WHERE everywhere OR e.project_id IS NULL OR e.project_id = $project_id
  WITH value,
       collect(CASE WHEN $with_times THEN [elementId(e), e.timestamp, coalesce(e.time_refs, [])] ELSE elementId(e) END) AS holders
  RETURN collect([value, holders]) AS token_holders
}
CALL (everywhere) {
  UNWIND $lists.entities AS name
  MATCH (term:Entity {app_name: $app_name, user_id: $user_id, name: name})<-[:MENTIONS]-(e)
  USING INDEX SEEK term:Entity(app_name, user_id, name)
  WHERE everywhere OR e.project_id IS NULL OR e.project_id = $project_id
  WITH name,
       collect(CASE WHEN $with_times THEN [elementId(e), e.timestamp, coalesce(e.time_refs, [])] ELSE elementId(e) END) AS holders
  RETURN collect([name, holders]) AS entity_holders
}
RETURN token_holders, entity_holders
