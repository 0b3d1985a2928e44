// Link consecutive entries of a session: (earlier)-[:NEXT]->(later).
UNWIND $lists.pairs AS pair
MATCH (earlier:Entry {id: pair.earlier}), (later:Entry {id: pair.later})
CREATE (earlier)-[:NEXT]->(later)
