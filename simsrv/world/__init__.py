"""The simulated game world: maps (static geometry) and players (positions moved by a
mobility model).  Plain numpy; no simulation clock lives here."""
