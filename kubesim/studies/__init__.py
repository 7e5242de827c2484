"""Studying scheduling: snapshots, record and replay, profiles compared, explanations.

The ``kubesim`` subcommands of issue 20, each a client of the APIServer like
any other (they read discovery, so every kind the cluster serves is covered,
custom resources included):

- :mod:`.snapshot`: ``kubesim snapshot save|load``;
- :mod:`.record`, :mod:`.replay` and the trace format of :mod:`.traceformat`,
  the client actions read from it (:mod:`.actions`) and the edits made to it
  (:mod:`.tracefilter`);
- :mod:`.compare`: two profiles on the same trace, side by side, with the
  figures of :mod:`.figures` and the plots of :mod:`.plots`;
- :mod:`.explain`: why a Pod went where it went (and not elsewhere);
- :mod:`.schedconfig`: ``kubesim scheduler config get|set``.
"""
