"""The web inbox (`GET /inbox`): where people see and answer their pauses, served from this
package with no build step and no asset from another origin.
"""

from symfonic.server.inbox.routes import install_inbox

__all__ = ["install_inbox"]
