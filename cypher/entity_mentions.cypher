// How many of the owner's entries in scope mention the entity $name, and the ids of the
// newest $limit of them, ordered as list_recent.cypher orders (ties as the networkx
// backend breaks them). In scope: global entries, plus $project_id's when it is not null.
// Starts from the entity's node (one seek of its key) and reads its mentions only, never
// the owner's other entries (graphmem graph --entity).
MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: $name})<-[:MENTIONS]-(e:Entry)
WHERE e.project_id IS NULL OR e.project_id = $project_id
WITH e
ORDER BY datetime(e.timestamp) DESC, e.position DESC, coalesce(e.session_id, '') DESC, e.id DESC
WITH collect(e.id) AS ids
RETURN size(ids) AS total, ids[..$limit] AS ids
