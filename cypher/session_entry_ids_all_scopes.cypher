// The ids of one session's entries, global and in every project.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id, session_id: $session_id})
RETURN collect(e.id) AS ids
