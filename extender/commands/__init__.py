"""The commands: ``reprieve explain`` (explain, explain_report, explain_table), ``check-policy`` and
``reprieve simulate`` (simulate); cluster: what explain and check-policy read, a snapshot or a
live cluster listed once."""
