// For each of $lists.values that the owner's entries hold as a token: the author of each
// of those entries (in every scope: whose entries use a word tells whose name it is) and the
// label of the owner's Entity of the same name (null: none). See
// MemoryService._names_others_call_speakers.
UNWIND $lists.values AS value
MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
USING INDEX SEEK t:Token(app_name, user_id, value)
OPTIONAL MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: value})
USING INDEX SEEK n:Entity(app_name, user_id, name)
RETURN value, [(t)<-[:HAS_TOKEN]-(e:Entry) | e.author] AS authors, n.label AS label
