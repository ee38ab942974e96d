"""Presenters: each reads a plain-data report and writes text; none computes."""
