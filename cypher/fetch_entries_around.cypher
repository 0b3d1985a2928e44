// fetch_entries.cypher and entries_around.cypher in one round trip: the owner's entries
// with the ids $lists.ids (whole entries only, as there), and the rows of entries_around
// for the same ids within $reach NEXT steps, in scope (global entries, plus those of
// $project_id when it is not null). A search on a server fetches what it ranked and what
// rule 7 (replies) walks around it together: most walks then read nothing more.
CALL () {
  UNWIND $lists.ids AS id
  // SEEK: see fetch_entries.cypher.
  MATCH (e:Entry {id: id})
  USING INDEX SEEK e:Entry(id)
  WHERE e.app_name = $app_name AND e.user_id = $user_id
  WITH e, e {.id, .app_name, .user_id, .project_id, .session_id, .position, .author, .role, .text, .timestamp, .time_refs, .language, .written} AS entry
  WHERE entry.id IS NOT NULL AND entry.app_name IS NOT NULL AND entry.user_id IS NOT NULL
    AND entry.position IS NOT NULL AND entry.author IS NOT NULL AND entry.role IS NOT NULL
    AND entry.text IS NOT NULL AND entry.timestamp IS NOT NULL
    AND size(keys(e)) = size([k IN keys(entry) WHERE entry[k] IS NOT NULL])
  RETURN collect(entry) AS entries
}
CALL () {
  UNWIND $lists.ids AS id
  MATCH (s:Entry {id: id})
  USING INDEX SEEK s:Entry(id)
  WHERE s.app_name = $app_name AND s.user_id = $user_id AND (s.project_id IS NULL OR s.project_id = $project_id)
  MATCH path = (s)-[:NEXT*0..2]-(e)
  WHERE length(path) <= $reach
  WITH DISTINCT e
  RETURN collect([e.id, [], [], e.project_id, [(e)-[:NEXT]-(f) | f.id], [], e.author, null, e.position]) AS candidates
}
RETURN entries, candidates
