// For each of these speaker tokens of the owner, the distinct authors and roles of the
// entries that still hold it: the token stays a speaker's word only if one of those
// authors has it in their name, and one speaking as the user only if such an entry has the
// role "user" (MemoryService's speaker rule; the words of a name are computed in Python).
UNWIND $lists.values AS value
MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
USING INDEX SEEK t:Token(app_name, user_id, value)
WHERE t.speaker
RETURN value, t.user_speaker AS user_speaker,
       COLLECT { MATCH (t)<-[:HAS_TOKEN]-(e:Entry) RETURN DISTINCT [e.author, e.role] } AS said
