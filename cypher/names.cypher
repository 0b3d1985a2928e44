// The names of the owner's Entity nodes and the words of its speakers' names
// (Token.speaker), read together: what a search groups names by (graphmem._entities,
// MemoryService._term_groups).
CALL () {
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id})
  RETURN collect(n.name) AS names
}
CALL () {
  MATCH (t:Token {app_name: $app_name, user_id: $user_id})
  WHERE t.speaker
  RETURN collect(t.value) AS speakers
}
RETURN names, speakers
