"""The Root Guard tray: what every editor window exposes, and approvals for agent file access.

``protocol``, ``approvals``, ``sessions``, ``paths`` and ``client`` are plain Python
(no Qt). ``broker`` (QtCore/QtNetwork), ``app``, ``window``, ``prompt`` and
``icons`` are the Qt side. ``docs/tray-protocol.md`` specifies the socket protocol.
"""
