// The NEXT links from one of the owner's entries with the ids $lists.ids to another of
// them, as [earlier id, later id]. Seeks each entry by id and reads its own links only.
UNWIND $lists.ids AS id
// The hint matters: left alone, the planner seeks the owner index and filters it by id.
MATCH (a:Entry {id: id})
USING INDEX SEEK a:Entry(id)
WHERE a.app_name = $app_name AND a.user_id = $user_id
MATCH (a)-[:NEXT]->(b:Entry)
WHERE b.id IN $lists.ids
RETURN collect([a.id, b.id]) AS links
