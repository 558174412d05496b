"""Figures: functions from results (DataFrames, world snapshots) to matplotlib figures."""
