// The postings of the given terms, in scope (see graphmem._gathering: the search decides
// which terms' postings to read and what to do with them; this only fetches).
//   token_holders   [token, [id of each in-scope entry holding it]] for each of $tokens
//                   held; with $with_times each holder is [id, timestamp, time_refs]
//   entity_holders  the same for each of $entities mentioned
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
  UNWIND $tokens AS value
  MATCH (:Token {app_name: $app_name, user_id: $user_id, value: value})<-[:HAS_TOKEN]-(e:Entry)
  WHERE everywhere OR e.project_id IS NULL OR e.project_id = $project_id
  WITH value,
       collect(CASE WHEN $with_times THEN [e.id, e.timestamp, coalesce(e.time_refs, [])] ELSE e.id END) AS holders
  RETURN collect([value, holders]) AS token_holders
}
CALL (everywhere) {
  UNWIND $entities AS name
  MATCH (:Entity {app_name: $app_name, user_id: $user_id, name: name})<-[:MENTIONS]-(e:Entry)
  WHERE everywhere OR e.project_id IS NULL OR e.project_id = $project_id
  WITH name,
       collect(CASE WHEN $with_times THEN [e.id, e.timestamp, coalesce(e.time_refs, [])] ELSE e.id END) AS holders
  RETURN collect([name, holders]) AS entity_holders
}
RETURN token_holders, entity_holders
