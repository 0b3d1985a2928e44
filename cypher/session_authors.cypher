// The authors of one session in one scope: global (null $project_id) or a project. An
// append reads them so that a new turn addressing an earlier speaker by name ("Thanks,
// Maria!") does not take the name as content, as add_session decides for a whole session.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id, session_id: $session_id})
WHERE (e.project_id IS NULL AND $project_id IS NULL) OR e.project_id = $project_id
RETURN collect(DISTINCT e.author) AS authors
