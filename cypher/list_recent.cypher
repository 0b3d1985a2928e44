// The owner's newest entries first (every project); ties as the networkx backend breaks them.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
RETURN e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp} AS entry
ORDER BY datetime(e.timestamp) DESC, e.position DESC, coalesce(e.session_id, '') DESC, e.id DESC
LIMIT $limit
