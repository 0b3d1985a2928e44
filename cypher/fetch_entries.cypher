// The owner's entries with these ids (ids of other owners or deleted entries are skipped),
// in one row: a row per entry cost the driver 0.5 ms more per search (1.60 -> 1.11 ms p50
// for 12 ids; benchmarks/README.md).
UNWIND $lists.ids AS id
// The hint matters, and it must say SEEK: left alone, the planner seeks the owner index
// (all the owner's entries) and filters it by id, once per id; told only USING INDEX, it
// scans the whole id index once per id (every entry of the store: 18 ms for 12 ids at 10k
// entries, 0 ms as a seek; benchmarks/README.md).
MATCH (e:Entry {id: id})
USING INDEX SEEK e:Entry(id)
WHERE e.app_name = $app_name AND e.user_id = $user_id
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
RETURN collect(entry) AS entries
