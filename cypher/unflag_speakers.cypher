// These tokens of the owner are no speaker's words any more (no entry of such an author
// holds them), or no words of one speaking as the user (no such entry has the role
// "user"): each row sets both flags as the entries still holding the token say.
UNWIND $lists.rows AS row
MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: row.value})
USING INDEX SEEK t:Token(app_name, user_id, value)
SET t.speaker = row.speaker, t.user_speaker = row.user_speaker
