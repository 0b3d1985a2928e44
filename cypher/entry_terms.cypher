// The tokens and entities (with their nodes' labels) of the owner's entries with these ids.
UNWIND $lists.ids AS id
// The hint matters: left alone, the planner seeks the owner index and filters it by id.
MATCH (e:Entry {id: id})
USING INDEX SEEK e:Entry(id)
WHERE e.app_name = $app_name AND e.user_id = $user_id
RETURN e.id AS id,
       [(e)-[:HAS_TOKEN]->(t:Token) | t.value] AS tokens,
       [(e)-[:MENTIONS]->(n:Entity) | [n.name, n.label]] AS entities
