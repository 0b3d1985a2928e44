// The owner's tokens that are words of a speaker's name (Token.speaker: see
// graphmem.backends._graph_model), and those of them that are words of the name of an
// author who speaks as the user (Token.user_speaker). A name a query spells another way is
// matched against the first; a question in the first person asks about the second.
MATCH (t:Token {app_name: $app_name, user_id: $user_id, speaker: true})
USING INDEX t:Token(app_name, user_id, speaker)
RETURN collect(t.value) AS values, collect(CASE WHEN t.user_speaker THEN t.value END) AS user_values
