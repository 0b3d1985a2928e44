// The owner's speaker tokens that have no Token.user_speaker, each with the distinct
// authors and roles of the entries holding it (schema version 3's data step computes the
// flag from them, as speaker_holders.cypher's reader does after a delete).
MATCH (t:Token {app_name: $app_name, user_id: $user_id})
WHERE t.speaker = true AND t.user_speaker IS NULL
RETURN t.value AS value, COLLECT { MATCH (t)<-[:HAS_TOKEN]-(e:Entry) RETURN DISTINCT [e.author, e.role] } AS said
