// Every entry of one owner that is in a session, with its scope, session, position and
// text, in session and position order: schema version 4's data step reads which of them
// only react, and links across them (graphmem._service.next_pairs).
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
WHERE e.session_id IS NOT NULL
RETURN e.id AS id, e.project_id AS project_id, e.session_id AS session_id, e.position AS position, e.text AS text
ORDER BY project_id, session_id, position
