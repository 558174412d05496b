"""Calibration of platform profiles against published measurements."""
