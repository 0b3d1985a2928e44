// How one entry was decomposed: its text, tokens and entities. Parameters: app, user, entry (an entry id, or its first characters as graphmem search shows them).
MATCH (x:Entry {app_name: $app, user_id: $user})-[r:HAS_TOKEN|MENTIONS]->(n)
WHERE x.id STARTS WITH $entry
RETURN x.id AS entry_id, x.text AS text, type(r) AS kind, coalesce(n.value, n.name) AS term, coalesce(n.label, "") AS entity_label
ORDER BY entry_id, kind, term
