// Link new entries to their Entity nodes: one row per entity (sorted by name, as for
// tokens) with the ids of the entries that mention it. A new entity takes the label of
// its first mention; later mentions do not relabel it.
UNWIND $lists.links AS link
MERGE (n:Entity {app_name: $app_name, user_id: $user_id, name: link.name})
  ON CREATE SET n.label = link.label
WITH n, link
UNWIND link.entry_ids AS entry_id
MATCH (e:Entry {id: entry_id})
CREATE (e)-[:MENTIONS]->(n)
