// The user's entity names that hold a name (lowercase, as stored, e.g. maria), with how many entries mention each: what "a name inside a longer one" reads (graphmem._entities; MemoryService.entity_groups gives the groups themselves). Parameters: app, user, name.
MATCH (n:Entity {app_name: $app, user_id: $user})<-[:MENTIONS]-(x:Entry)
WHERE n.name CONTAINS $name
RETURN n.name AS entity, count(x) AS entries
ORDER BY entries DESC, entity
