// Before entries are deleted (delete_entries.cypher, same ids and $written): the NEXT
// links across each (a link over a run of reactions, graphmem._service.next_pairs, from
// the turn before the run to the one after it), so that a deleted turn leaves a gap. Such
// a link starts at most $reach positions before it, in its session and scope: found
// through the index of a session's positions (schema version 4).
UNWIND $lists.ids AS id
MATCH (r:Entry {id: id})
USING INDEX SEEK r:Entry(id)
WHERE r.app_name = $app_name AND r.user_id = $user_id AND r.session_id IS NOT NULL
  AND ($written IS NULL OR coalesce(r.written, -1) = $written[id])
MATCH (x:Entry {app_name: $app_name, user_id: $user_id, session_id: r.session_id})-[n:NEXT]->(y:Entry)
WHERE r.position - $reach <= x.position < r.position AND y.position > r.position
  AND coalesce(x.project_id, '') = coalesce(r.project_id, '')
DELETE n
