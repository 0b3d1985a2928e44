// The names of the owner's Entity nodes and the words of its speakers' names
// (Token.speaker; those speaking as the user: Token.user_speaker), read together: what a
// search groups names by (graphmem._entities, MemoryService._term_groups).
CALL () {
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id})
  RETURN collect(n.name) AS names
}
CALL () {
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, speaker: true})
  USING INDEX t:Token(app_name, user_id, speaker)
  RETURN collect(t.value) AS speakers, collect(CASE WHEN t.user_speaker THEN t.value END) AS user_speakers
}
RETURN names, speakers, user_speakers
