// An entity's neighbourhood, part 2: the entities mentioned in the same entries, with how many entries mention both. Parameters: app, user, name (lowercase, as stored, e.g. maria).
MATCH (n:Entity {app_name: $app, user_id: $user, name: $name})<-[:MENTIONS]-(x:Entry)-[:MENTIONS]->(o:Entity)
RETURN o.name AS entity, o.label AS label, COUNT(x) AS entries
ORDER BY entries DESC, entity
