// The owner's entries with the ids $lists.ids, in scope (global entries, plus those of
// $project_id when it is not null), and every entry within $reach (0 to 2) NEXT steps of
// one, each once, as the rows of neighbourhood.cypher with nothing matched and no second
// neighbours: [id, [], [], project_id, ids one NEXT step away, [], author, null, position].
// What a search reads to tell whether a run of one author's messages is a reply (rule 7 in
// graphmem._scoring): who said the messages around it.
UNWIND $lists.ids AS id
MATCH (s:Entry {id: id})
USING INDEX SEEK s:Entry(id)
WHERE s.app_name = $app_name AND s.user_id = $user_id AND (s.project_id IS NULL OR s.project_id = $project_id)
MATCH path = (s)-[:NEXT*0..2]-(e)
WHERE length(path) <= $reach
WITH DISTINCT e
RETURN collect([e.id, [], [], e.project_id, [(e)-[:NEXT]-(f) | f.id], [], e.author, null, e.position]) AS candidates
