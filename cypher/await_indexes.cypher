// Wait until every index is online (a new index populates in the background).
CALL db.awaitIndexes($timeout_seconds)
