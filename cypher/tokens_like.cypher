// The owner's token values that start with $first and have $min_length to $max_length
// characters: the words a misspelt query word, or one written with other accents, may stand
// for (MemoryService._typo_variants, MemoryService._accent_variants).
MATCH (t:Token {app_name: $app_name, user_id: $user_id})
WHERE t.value STARTS WITH $first AND size(t.value) >= $min_length AND size(t.value) <= $max_length
RETURN collect(t.value) AS values
