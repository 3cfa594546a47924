"""``rootguard run``: the session's effective policy enforced by the kernel.

* ``profile``: ``build_profile(session, ...) -> Profile``, the mount operations
  (pure data; ``Profile.bwrap_args()``, ``Profile.shim_argv()``,
  ``Profile.command_line()`` render it).
* ``shim``: the Landlock exec shim run inside the sandbox (stdlib only).
* ``landlock``: Landlock detection on the host.
* ``runner``: runs COMMAND under bubblewrap (or, explicitly, Landlock alone),
  watches the masked paths, passes the exit status through; 125 when
  confinement cannot be set up.
* ``watch``: host-side watch of masked paths (watchdog).
* ``docker``: the same mount set as a ``docker run`` command.
"""

from lsp_bridge.sandbox.profile import (
    Hidden,
    MountOp,
    Profile,
    ProfileError,
    Unenforceable,
    build_profile,
)

__all__ = ["Hidden", "MountOp", "Profile", "ProfileError", "Unenforceable", "build_profile"]
