"""Quake BSP version 29 maps: the file reader, hull point tests and the decompressed PVS."""
