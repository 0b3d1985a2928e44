// An entity's neighbourhood, part 1: the entries that mention it, oldest first (session "" = no session). Parameters: app, user, name (lowercase, as stored, e.g. maria).
MATCH (n:Entity {app_name: $app, user_id: $user, name: $name})<-[:MENTIONS]-(x:Entry)
RETURN x.timestamp AS timestamp, coalesce(x.session_id, "") AS session, x.position AS position, x.author AS author, x.text AS text, x.id AS entry_id
ORDER BY timestamp, session, position, entry_id
