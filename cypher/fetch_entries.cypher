// The owner's entries with these ids (ids of other owners or deleted entries are skipped).
UNWIND $ids AS id
// The hint matters: left alone, the planner seeks the owner index (all the owner's
// entries) and filters it by id, once per id.
MATCH (e:Entry {id: id})
USING INDEX e:Entry(id)
WHERE e.app_name = $app_name AND e.user_id = $user_id
RETURN e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp} AS entry
