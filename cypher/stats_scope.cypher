// Counts of what a search of one scope of an app and user sees: global entries, and with
// $project_id that project's too, and the tokens and entities those entries hold; nothing
// of another project (an MCP server for one project reports these). Sessions as in
// stats_owner.cypher.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
WHERE e.project_id IS NULL OR e.project_id = $project_id
WITH collect(e) AS seen,
     count(DISTINCT CASE WHEN e.session_id IS NOT NULL THEN [coalesce(e.project_id, ''), e.session_id] END) AS sessions,
     count(DISTINCT e.project_id) AS projects
CALL (seen) {
  UNWIND seen AS s
  MATCH (s)-[:HAS_TOKEN]->(t:Token)
  RETURN count(DISTINCT t) AS tokens
}
CALL (seen) {
  UNWIND seen AS s
  MATCH (s)-[:MENTIONS]->(n:Entity)
  RETURN count(DISTINCT n) AS entities
}
RETURN CASE WHEN size(seen) > 0 THEN 1 ELSE 0 END AS users, size(seen) AS entries, tokens, entities, sessions, projects
