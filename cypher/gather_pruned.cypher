// gather.cypher, pruned (see graphmem._service.SeedRequest): read the postings of the
// query's *seed* terms only, $seed_tokens and $seed_entities, each given as [term, share].
// A seed holder's share is the sum of the shares of the seeds it holds; the holders with
// the highest shares, each at least $min_share and at most $max_holders of them (null: no
// cap), are expanded: they and every entry within two NEXT steps of one are candidates,
// each matched against every query term by reading its own few HAS_TOKEN and MENTIONS
// links. A term on half the user's entries (the speaker's name) is then never expanded.
// The term statistics are not read here: the search read them to choose the seeds (counting
// a user's entries reads every one of them).
//   unexpanded  the highest share of a holder in scope that was not expanded, or null
//   candidates  [id, matched tokens, matched entities, project_id, ids one NEXT step
//               away, ids two NEXT steps away, author, null or (with $with_times)
//               [timestamp, time_refs]], for every expanded holder and every entry within
//               two NEXT steps of one (same session, so in scope too)
CALL () {
  CALL () {
    UNWIND $seed_tokens AS seed
    MATCH (:Token {app_name: $app_name, user_id: $user_id, value: seed[0]})<-[:HAS_TOKEN]-(s:Entry)
    WHERE s.project_id IS NULL OR s.project_id = $project_id
    RETURN s, seed[1] AS share
    UNION ALL
    UNWIND $seed_entities AS seed
    MATCH (:Entity {app_name: $app_name, user_id: $user_id, name: seed[0]})<-[:MENTIONS]-(s:Entry)
    WHERE s.project_id IS NULL OR s.project_id = $project_id
    RETURN s, seed[1] AS share
  }
  WITH s, sum(share) AS share
  ORDER BY share DESC
  WITH collect([s, share]) AS ranked
  WITH ranked, [h IN ranked WHERE h[1] >= $min_share][..coalesce($max_holders, size(ranked))] AS expanded
  RETURN [h IN expanded | h[0]] AS holders,
         CASE WHEN size(expanded) < size(ranked) THEN ranked[size(expanded)][1] END AS unexpanded
}
CALL (holders) {
  UNWIND holders AS s
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
RETURN unexpanded, candidates
