// The owner's entries with these ids (ids of other owners or deleted entries are skipped).
UNWIND $ids AS id
MATCH (e:Entry {id: id})
WHERE e.app_name = $app_name AND e.user_id = $user_id
RETURN e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp} AS entry
