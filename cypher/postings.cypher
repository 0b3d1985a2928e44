// The postings of the given terms, in scope (see graphmem._gathering: the search decides
// which terms' postings to read and what to do with them; this only fetches).
//   token_holders   [token, [id of each in-scope entry holding it]] for each of $tokens
//                   held; with $with_times each holder is [id, timestamp, time_refs]
//   entity_holders  the same for each of $entities mentioned
// In scope: global entries, plus those of $project_id when it is not null.
CALL () {
  UNWIND $tokens AS value
  MATCH (:Token {app_name: $app_name, user_id: $user_id, value: value})<-[:HAS_TOKEN]-(e:Entry)
  WHERE e.project_id IS NULL OR e.project_id = $project_id
  WITH value,
       CASE WHEN $with_times THEN collect([e.id, e.timestamp, coalesce(e.time_refs, [])]) ELSE collect(e.id) END
         AS holders
  RETURN collect([value, holders]) AS token_holders
}
CALL () {
  UNWIND $entities AS name
  MATCH (:Entity {app_name: $app_name, user_id: $user_id, name: name})<-[:MENTIONS]-(e:Entry)
  WHERE e.project_id IS NULL OR e.project_id = $project_id
  WITH name,
       CASE WHEN $with_times THEN collect([e.id, e.timestamp, coalesce(e.time_refs, [])]) ELSE collect(e.id) END
         AS holders
  RETURN collect([name, holders]) AS entity_holders
}
RETURN token_holders, entity_holders
