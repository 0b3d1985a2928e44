// term_stats.cypher and, in the same round trip (a round trip costs more than a small
// query; see graphmem._service.MemoryService._term_stats_or_gather): for an owner holding
// at most $full_at_most entries, neighbourhood_of_holders.cypher too (a small user is
// searched without pruning); for a larger one, postings.cypher of the terms held by at most
// $prefetch_df_share of its entries (null: none), the postings a pruned search reads first.
//   entry_count, token_df, entity_df   as in term_stats.cypher
//   everywhere   the owner's counter says none of its entries is in a project (below)
//   gathered     whether the entries were gathered (entry_count <= $full_at_most)
//   candidates   as in neighbourhood_of_holders.cypher when gathered, else []
//   token_holders, entity_holders   as in postings.cypher (holders named by element id,
//                no holder's label or property read), of the terms prefetched ([] when gathered)
// The gathering and the prefetch read only the tokens token_df found held: a query's
// related words (graphmem._related) are mostly held by no entry, and each is an index seek
// (a query with 1,950 candidate forms paid 10 ms for seeking them twice instead of once).
// N as in term_stats.cypher; `everywhere`: the owner's counter says no entry is in a
// project, so every holder is in scope and the prefetched postings need no scope check.
// Every term node is found by a seek on (owner, value or name), named (USING INDEX SEEK):
// left to choose, the planner scanned the whole index, every user's term nodes, filtering
// them by owner and name (benchmarks/README.md, Speed, session 30). So in every query.
CALL () {
  OPTIONAL MATCH (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
  RETURN CASE WHEN c IS NULL THEN COUNT { MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) } ELSE c.entries END
           AS entry_count,
         coalesce(c.project_entries = 0, false) AS everywhere
}
CALL () {
  UNWIND $lists.tokens AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  USING INDEX SEEK t:Token(app_name, user_id, value)
  RETURN collect([value, COUNT { (t)<-[:HAS_TOKEN]-() }, t.speaker]) AS token_df
}
CALL () {
  UNWIND $lists.entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  USING INDEX SEEK n:Entity(app_name, user_id, name)
  RETURN collect([name, COUNT { (n)<-[:MENTIONS]-() }]) AS entity_df
}
CALL (entry_count, token_df) {
  WITH entry_count, token_df WHERE entry_count <= $full_at_most
  CALL (token_df) {
    UNWIND [held IN token_df | held[0]] AS value
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
}
CALL (entry_count, everywhere, token_df) {
  WITH entry_count, everywhere, token_df WHERE entry_count > $full_at_most AND $prefetch_df_share IS NOT NULL
  UNWIND [held IN token_df | held[0]] AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  USING INDEX SEEK t:Token(app_name, user_id, value)
  WHERE COUNT { (t)<-[:HAS_TOKEN]-() } <= $prefetch_df_share * entry_count
  MATCH (t)<-[:HAS_TOKEN]-(e)
  WHERE everywhere OR e.project_id IS NULL OR e.project_id = $project_id
  WITH value,
       collect(CASE WHEN $with_times THEN [elementId(e), e.timestamp, coalesce(e.time_refs, [])] ELSE elementId(e) END) AS holders
  RETURN collect([value, holders]) AS token_holders
}
CALL (entry_count, everywhere) {
  WITH entry_count, everywhere WHERE entry_count > $full_at_most AND $prefetch_df_share IS NOT NULL
  UNWIND $lists.entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  USING INDEX SEEK n:Entity(app_name, user_id, name)
  WHERE COUNT { (n)<-[:MENTIONS]-() } <= $prefetch_df_share * entry_count
  MATCH (n)<-[:MENTIONS]-(e)
  WHERE everywhere OR e.project_id IS NULL OR e.project_id = $project_id
  WITH name,
       collect(CASE WHEN $with_times THEN [elementId(e), e.timestamp, coalesce(e.time_refs, [])] ELSE elementId(e) END) AS holders
  RETURN collect([name, holders]) AS entity_holders
}
RETURN entry_count, everywhere, token_df, entity_df, entry_count <= $full_at_most AS gathered, candidates,
       token_holders, entity_holders
