// A bounded neighbourhood (see graphmem._gathering.NeighbourhoodRequest): the owner's
// entries with the element ids $lists.around (postings.cypher names holders so) and every entry
// within $reach (0 to 2) NEXT steps of one, each once, matched against the query's $lists.tokens
// and $lists.entities; with $holding_only, only those holding one of them. An id naming no entry
// of the owner (any more: element ids of deleted nodes are reused), or one out of scope,
// names nothing: in scope are global entries, plus those of $project_id when it is not
// null (postings.cypher may list a holder out of scope, see there).
//   candidates  [id, matched tokens, matched entities, project_id, ids one NEXT step
//               away, ids two NEXT steps away, author, null or (with $with_times)
//               [timestamp, time_refs], position]; a neighbour is in its entry's
//               session, so in the scope of the entry it was reached from
// Rows are lists, not maps: decoding the answer is much of a search's time.
// The query's term nodes are found first, one index seek each; then each entry's HAS_TOKEN
// and MENTIONS links are walked once and compared with those nodes, by identity: no
// property of a linked term is read (comparing each link's value or name with the query's
// read one property per link, of every entry reached), and only the terms it matches are
// named, from the query's own lists. Its neighbours one and two steps away come from one
// walk too.
CALL () {
  UNWIND $lists.tokens AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  USING INDEX SEEK t:Token(app_name, user_id, value)
  RETURN collect(t) AS token_nodes, collect(value) AS token_values
}
CALL () {
  UNWIND $lists.entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  USING INDEX SEEK n:Entity(app_name, user_id, name)
  RETURN collect(n) AS entity_nodes, collect(name) AS entity_names
}
WITH token_nodes + entity_nodes AS terms, size(token_nodes) AS token_count, token_values, entity_names
CALL (terms) {
  UNWIND $lists.around AS key
  // The seek by element id alone, in a subquery of its own: with the label and owner in
  // the same MATCH the planner may instead read every entry of the owner (its index) once
  // per key and compare ids, and did for up to ~100 keys (0.5-1 s a step for a user of
  // 10,000 entries, against ~20 ms). The checks come after the seek, on one node each.
  CALL (key) {
    MATCH (s)
    WHERE elementId(s) = key
    RETURN s
  }
  WITH s
  WHERE s:Entry AND s.app_name = $app_name AND s.user_id = $user_id
    AND (s.project_id IS NULL OR s.project_id = $project_id)
  // Only entries are linked by NEXT: the entries reached need no label check.
  MATCH path = (s)-[:NEXT*0..2]-(e)
  WHERE length(path) <= $reach
  WITH DISTINCT e
  WITH e, [(e)-[:HAS_TOKEN|MENTIONS]->(t) WHERE t IN terms | t] AS held
  WHERE NOT $holding_only OR size(held) > 0
  RETURN e, [i IN range(0, size(terms) - 1) WHERE terms[i] IN held] AS matched
}
WITH e, matched, token_count, token_values, entity_names,
     [p = (e)-[:NEXT*1..2]-(f) WHERE f <> e | [length(p), f.id]] AS near_and_far
RETURN collect([
  e.id,
  [i IN matched WHERE i < token_count | token_values[i]],
  [i IN matched WHERE i >= token_count | entity_names[i - token_count]],
  e.project_id,
  [step IN near_and_far WHERE step[0] = 1 | step[1]],
  [step IN near_and_far WHERE step[0] = 2 | step[1]],
  e.author,
  CASE WHEN $with_times THEN [e.timestamp, coalesce(e.time_refs, [])] END,
  e.position
]) AS candidates
