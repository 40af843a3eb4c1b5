"""Pure preemption policy: immutable cluster data in, decisions with reasons out.

This package imports only the standard library and itself (tests/unit/test_policy_purity.py
keeps it so). It never reads a clock or a random source unless one is passed in.
"""
