// The ids of every entry of one project.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id, project_id: $project_id})
RETURN collect(e.id) AS ids
