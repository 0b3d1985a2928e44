// gather.cypher, pruned: read the postings of the query's *seed* terms only (those held by
// at most $max_df_share of the owner's entries, and always the rarest held term; see
// graphmem._service.seed_terms), then every entry within two NEXT steps of a seed holder,
// each matched against every query term by reading its own few HAS_TOKEN and MENTIONS
// links. A term on half the user's entries (the speaker's name) is then never expanded.
// $seed_tokens and $seed_entities, when not null, are the seeds instead (the service's
// later steps choose them; see graphmem._scoring, "Choosing the seeds").
//   entry_count, token_df, entity_df   as in gather.cypher
//   seed_tokens, seed_entities         the terms gathered from
//   candidates  [id, matched tokens, matched entities, project_id, ids one NEXT step
//               away, ids two NEXT steps away, author, null or (with $with_times) [timestamp, time_refs]], for every seed holder in scope and every
//               entry within two NEXT steps of one (same session, so in scope too)
CALL () {
  MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
  RETURN count(e) AS entry_count
}
CALL () {
  UNWIND $tokens AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  RETURN collect([value, COUNT { (t)<-[:HAS_TOKEN]-() }, t.speaker]) AS token_df
}
CALL () {
  UNWIND $entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  RETURN collect([name, COUNT { (n)<-[:MENTIONS]-() }]) AS entity_df
}
WITH entry_count, token_df, entity_df,
     reduce(least = null, pair IN token_df + entity_df |
       CASE WHEN pair[1] > 0 AND (least IS NULL OR pair[1] < least) THEN pair[1] ELSE least END) AS rarest
WITH entry_count, token_df, entity_df,
     coalesce($seed_tokens,
       [pair IN token_df WHERE pair[1] > 0 AND (pair[1] = rarest OR pair[1] <= $max_df_share * entry_count) | pair[0]]) AS seed_tokens,
     coalesce($seed_entities,
       [pair IN entity_df WHERE pair[1] > 0 AND (pair[1] = rarest OR pair[1] <= $max_df_share * entry_count) | pair[0]]) AS seed_entities
CALL (seed_tokens, seed_entities) {
  CALL (seed_tokens, seed_entities) {
    UNWIND seed_tokens AS value
    MATCH (:Token {app_name: $app_name, user_id: $user_id, value: value})<-[:HAS_TOKEN]-(s:Entry)
    WHERE s.project_id IS NULL OR s.project_id = $project_id
    RETURN s
    UNION
    UNWIND seed_entities AS name
    MATCH (:Entity {app_name: $app_name, user_id: $user_id, name: name})<-[:MENTIONS]-(s:Entry)
    WHERE s.project_id IS NULL OR s.project_id = $project_id
    RETURN s
  }
  MATCH (s)-[:NEXT*0..2]-(e:Entry)
  WITH DISTINCT e
  RETURN collect([
    e.id,
    [(e)-[:HAS_TOKEN]->(t:Token) WHERE t.value IN $tokens | t.value],
    [(e)-[:MENTIONS]->(n:Entity) WHERE n.name IN $entities | n.name],
    e.project_id,
    [(e)-[:NEXT]-(n:Entry) | n.id],
    [(e)-[:NEXT]-(:Entry)-[:NEXT]-(f:Entry) WHERE f <> e | f.id],
    e.author,
    CASE WHEN $with_times THEN [e.timestamp, coalesce(e.time_refs, [])] END
  ]) AS candidates
}
RETURN entry_count, token_df, entity_df, seed_tokens, seed_entities, candidates
