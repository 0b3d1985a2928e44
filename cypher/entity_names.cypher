// The names of the owner's Entity nodes, for reading a name a query spells another way
// ("Katharine" for "Katherine") as that name (see MemoryService._name_variants).
MATCH (n:Entity {app_name: $app_name, user_id: $user_id})
RETURN collect(n.name) AS names
