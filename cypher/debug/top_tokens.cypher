// Top tokens of a user: each token and how many of the user's entries have it, most used first (25 rows). Parameters: app, user.
MATCH (x:Entry {app_name: $app, user_id: $user})-[:HAS_TOKEN]->(t:Token)
RETURN t.value AS token, COUNT(x) AS entries
ORDER BY entries DESC, token
LIMIT 25
