"""The real server measured here: the patched mvdsv built from ../shared, synthetic
QuakeWorld clients, one run, campaigns, and the model against them (docs/testbed.md).
"""
