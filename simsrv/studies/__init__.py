"""Studies: scripted experiments that produce the tables and figures quoted in ``docs/``."""
