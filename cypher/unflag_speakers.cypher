// These tokens of the owner are no speaker's words any more (no entry of such an author
// holds them).
UNWIND $lists.values AS value
MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
USING INDEX SEEK t:Token(app_name, user_id, value)
SET t.speaker = false
