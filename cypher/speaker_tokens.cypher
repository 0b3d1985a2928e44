// The owner's tokens that are words of a speaker's name (Token.speaker: see
// graphmem.backends._graph_model), for matching a name a query spells another way.
MATCH (t:Token {app_name: $app_name, user_id: $user_id})
WHERE t.speaker
RETURN collect(t.value) AS values
