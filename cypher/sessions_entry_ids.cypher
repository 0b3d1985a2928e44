// The ids of the entries of these sessions in one scope: global (null $project_id) or a project.
UNWIND $lists.session_ids AS session_id
MATCH (e:Entry {app_name: $app_name, user_id: $user_id, session_id: session_id})
WHERE (e.project_id IS NULL AND $project_id IS NULL) OR e.project_id = $project_id
RETURN collect(e.id) AS ids
