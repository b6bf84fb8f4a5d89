"""Operator actions: single-job compare-and-move buttons, bulk runs in bounded steps, and the audit log."""
