// Token and Entity nodes that no entry links to; there should be none (a delete removes the terms no remaining entry uses). No parameters.
MATCH (n:Token|Entity)
WHERE NOT EXISTS { MATCH (n)<-[:HAS_TOKEN|MENTIONS]-(:Entry) }
RETURN n.app_name AS app, n.user_id AS user, coalesce(n.value, n.name) AS term, coalesce(n.label, "") AS entity_label
ORDER BY app, user, term, entity_label
