// Link new entries to their Entity nodes (sorted by name, as for tokens). A new entity
// takes the label of its first mention; later mentions do not relabel it.
UNWIND $links AS link
MATCH (e:Entry {id: link.entry_id})
MERGE (n:Entity {app_name: $app_name, user_id: $user_id, name: link.name})
  ON CREATE SET n.label = link.label
CREATE (e)-[:MENTIONS]->(n)
