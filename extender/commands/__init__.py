"""Offline commands: ``reprieve explain`` (explain, explain_report, explain_table), ``check-policy`` and ``reprieve simulate`` (simulate)."""
