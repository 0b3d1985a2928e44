// Link entries with NEXT where they are not linked yet: (earlier)-[:NEXT]->(later).
UNWIND $lists.pairs AS pair
MATCH (earlier:Entry {id: pair.earlier}), (later:Entry {id: pair.later})
MERGE (earlier)-[:NEXT]->(later)
