// Every entry of the owner, global and in every project.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
RETURN e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp} AS entry
