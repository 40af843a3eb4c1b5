"""Kubernetes Events about the preemptions reprieve answered, where operators already look.

- recorder: writes events.k8s.io/v1 Events from a background thread, aggregated into series
  and rate-limited per object as client-go's recorder does; drops (and counts) rather than
  blocks.
- notes: the words: which node and why, and why each victim rather than the pods that stay.
- witness: keeps what each preempt answer's Events will say in the ledger's entry for it
  (extender.state.ledger) and, once reprieve's view shows it carried out, records the Events.
"""
