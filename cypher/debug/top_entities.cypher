// Top entities of a user: each named entity, its spaCy label and how many of the user's entries mention it (25 rows). Parameters: app, user.
MATCH (x:Entry {app_name: $app, user_id: $user})-[:MENTIONS]->(n:Entity)
RETURN n.name AS entity, n.label AS label, COUNT(x) AS entries
ORDER BY entries DESC, entity
LIMIT 25
