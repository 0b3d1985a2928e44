// Names of the indexes and constraints in place (a constraint's backing index has its name).
SHOW INDEXES YIELD name
RETURN collect(name) AS names
