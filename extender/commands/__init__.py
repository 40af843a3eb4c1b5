"""Offline commands: ``reprieve explain`` (explain, explain_report, explain_table) and ``check-policy``."""
