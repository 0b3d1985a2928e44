// Everything stored for one user, for an erasure check (no rows after graphmem delete-user): entries have an entry_id, entities an entity_label, tokens neither. Parameters: app, user.
MATCH (n {app_name: $app, user_id: $user})
RETURN coalesce(n.text, n.value, n.name) AS stored, coalesce(n.label, "") AS entity_label, coalesce(n.id, "") AS entry_id, n.session_id AS session, n.project_id AS project
ORDER BY stored, entity_label, entry_id
