// The entries with these ids, whoever owns them (restore_session refuses ids held elsewhere).
UNWIND $lists.ids AS id
MATCH (e:Entry {id: id})
RETURN e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp, .time_refs, .language} AS entry
