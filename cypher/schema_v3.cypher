// Schema version 3: a user's speaker tokens found in one seek (speaker_tokens.cypher,
// names.cypher), not by reading every token of the user. Idempotent (IF NOT EXISTS).
// Its data step runs before it (Neo4jMemoryService._flag_user_speakers): Token.user_speaker
// on the speaker tokens of a store written before it was kept.
CREATE INDEX graphmem_v3_token_speaker IF NOT EXISTS
FOR (t:Token) ON (t.app_name, t.user_id, t.speaker);
