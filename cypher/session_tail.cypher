// The last $count entries (highest positions first) of one session in one scope: global
// (null $project_id) or a project, with their text (whether each only reacts decides the
// NEXT links an append makes: graphmem._service.linked_after). No row when the session
// holds no entry. Run after lock_sessions.cypher.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id, session_id: $session_id})
WHERE (e.project_id IS NULL AND $project_id IS NULL) OR e.project_id = $project_id
RETURN e.id AS id, e.position AS position, e.text AS text
ORDER BY e.position DESC
LIMIT $count
