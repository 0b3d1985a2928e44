// The entries of one session in one scope: global (null $project_id) or a project, in
// position order (MemoryService.session_entries). Found through the session index.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id, session_id: $session_id})
WHERE (e.project_id IS NULL AND $project_id IS NULL) OR e.project_id = $project_id
WITH e, e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp, .time_refs, .language, .written} AS entry
// Whole entries only. Reads are read committed: a node found through an index can be
// deleted by a concurrent commit (a session replaced) before or while its properties are
// read, and those then read as null. Keep a row when every required property was read and
// the node, looked at again afterwards, still has exactly the properties read: entries
// are never updated, so the row is then the entry as written.
WHERE entry.id IS NOT NULL AND entry.app_name IS NOT NULL AND entry.user_id IS NOT NULL
  AND entry.position IS NOT NULL AND entry.author IS NOT NULL AND entry.role IS NOT NULL
  AND entry.text IS NOT NULL AND entry.timestamp IS NOT NULL
  AND size(keys(e)) = size([k IN keys(entry) WHERE entry[k] IS NOT NULL])
RETURN entry
ORDER BY entry.position
