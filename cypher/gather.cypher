// Everything the scorer needs for one query, for one owner, in one round trip. It starts
// from the query's Token and Entity nodes and never reads entries that share no term.
//   entry_count  all the owner's entries (every project): the N of the idf
//   token_df     [token, degree of its node] (the entries holding it, every project)
//   entity_df    [name, degree] for the query's entities
//   candidates   in-scope entries sharing a query term, each as [id, matched tokens,
//                matched entities, ids one NEXT step away, ids two NEXT steps away]
//   recency      [id, timestamp, position, session_id, project_id] of every candidate
//                and every entry around one, each once
// Rows are lists, not maps, and the recency of an entry is sent once however many
// candidates it is next to: decoding the answer is most of a search's time.
// In scope: global entries, plus those of $project_id when it is not null.
CALL () {
  MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
  RETURN count(e) AS entry_count
}
CALL () {
  UNWIND $tokens AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  RETURN collect([value, COUNT { (t)<-[:HAS_TOKEN]-() }]) AS token_df
}
CALL () {
  UNWIND $entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  RETURN collect([name, COUNT { (n)<-[:MENTIONS]-() }]) AS entity_df
}
CALL () {
  CALL () {
    UNWIND $tokens AS value
    MATCH (:Token {app_name: $app_name, user_id: $user_id, value: value})<-[:HAS_TOKEN]-(e:Entry)
    WHERE e.project_id IS NULL OR e.project_id = $project_id
    RETURN e, value AS token, null AS entity
    UNION ALL
    UNWIND $entities AS name
    MATCH (:Entity {app_name: $app_name, user_id: $user_id, name: name})<-[:MENTIONS]-(e:Entry)
    WHERE e.project_id IS NULL OR e.project_id = $project_id
    RETURN e, null AS token, name AS entity
  }
  WITH e, collect(token) AS tokens, collect(entity) AS entities
  // Recency rows, not nodes: a node carried in a list is a whole node value (its text
  // too), and DISTINCT over those took megabytes per query.
  WITH e, tokens, entities,
       [(e)-[:NEXT]-(n:Entry) | [n.id, n.timestamp, n.position, n.session_id, n.project_id]] AS near,
       [(e)-[:NEXT]-(:Entry)-[:NEXT]-(f:Entry) WHERE f <> e | [f.id, f.timestamp, f.position, f.session_id, f.project_id]] AS far
  WITH collect([e.id, tokens, entities, [n IN near | n[0]], [f IN far | f[0]]]) AS candidates,
       collect([[e.id, e.timestamp, e.position, e.session_id, e.project_id]] + near + far) AS around
  RETURN candidates,
         COLLECT {
           UNWIND around AS group
           UNWIND group AS row
           RETURN DISTINCT row
         } AS recency
}
RETURN entry_count, token_df, entity_df, candidates, recency
