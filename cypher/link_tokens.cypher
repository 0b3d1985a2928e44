// Link new entries to their Token nodes, creating the tokens that do not exist yet.
// Rows arrive sorted by token value, so concurrent writers lock shared tokens in the same
// order (fewer deadlocks). MERGE, not MATCH: a token a concurrent delete just removed
// as an orphan is created again instead of silently losing the link.
UNWIND $links AS link
MATCH (e:Entry {id: link.entry_id})
MERGE (t:Token {app_name: $app_name, user_id: $user_id, value: link.value})
CREATE (e)-[:HAS_TOKEN]->(t)
