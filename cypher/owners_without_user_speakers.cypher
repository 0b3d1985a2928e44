// The owners with speaker tokens that have no Token.user_speaker (written before graphmem
// kept it): schema version 3's data step flags them, one owner at a time.
MATCH (t:Token)
WHERE t.speaker = true AND t.user_speaker IS NULL
RETURN DISTINCT t.app_name AS app_name, t.user_id AS user_id
