// The Token and Entity nodes of one app and user that no entry uses, and its counter node
// (create_entries.cypher) if it holds no entry: the last step of an erasure (deleting
// entries already removes the terms they orphan, and the counter with the last entry; this
// catches any left by an earlier version). `IS NOT NULL` lets the planner use the key
// constraints' indexes.
CALL () {
  MATCH (t:Token {app_name: $app_name, user_id: $user_id})
  WHERE t.value IS NOT NULL AND NOT EXISTS { (t)<--() }
  DELETE t
  RETURN count(t) AS tokens
}
CALL () {
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id})
  WHERE n.name IS NOT NULL AND NOT EXISTS { (n)<--() }
  DELETE n
  RETURN count(n) AS entities
}
CALL () {
  MATCH (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
  WHERE NOT EXISTS { MATCH (:Entry {app_name: $app_name, user_id: $user_id}) }
  DELETE c
  RETURN count(c) AS counters
}
RETURN tokens, entities, counters
