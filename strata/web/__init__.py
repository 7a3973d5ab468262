"""The web console served by ``strata serve`` at ``/``, its read-only API, and offline ``/docs`` and ``/redoc``.

The console is plain HTML, one script and one stylesheet shipped in ``strata/web/static`` (no CDN, no build
step). It calls the same JSON API as any client, sending ``Authorization: Bearer KEY`` when the user has
entered a key. Markdown in answers, reports and chunks is rendered on the server (:mod:`strata.web.markdown`).
"""

from strata.web.docs import mount_offline_docs
from strata.web.routes import mount_console

__all__ = ["mount_console", "mount_offline_docs"]
