// Everything of the shared graph model stored for one user, for an erasure check (no rows after graphmem delete-user): entries have an entry_id, entities an entity_label, tokens neither. On Neo4j a user holding entries also has a GraphmemUser node (its entry count, deleted with its last entry), which this leaves out to read the same on both backends. Parameters: app, user.
MATCH (n:Entry|Token|Entity {app_name: $app, user_id: $user})
RETURN coalesce(n.text, n.value, n.name) AS stored, coalesce(n.label, "") AS entity_label, coalesce(n.id, "") AS entry_id, n.session_id AS session, n.project_id AS project
ORDER BY stored, entity_label, entry_id
