// Set the speaker flags of these tokens of the owner, as the entries still holding each
// say (computed in Python: the words of a name): Token.speaker while an entry of an author
// with that word in their name holds it, Token.user_speaker while such an entry has the
// role "user". Run after a delete (flags that no longer hold) and by schema version 3's
// data step (tokens written before user_speaker was kept).
UNWIND $lists.rows AS row
MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: row.value})
USING INDEX SEEK t:Token(app_name, user_id, value)
SET t.speaker = row.speaker, t.user_speaker = row.user_speaker
