"""Running the HTTP API under uvicorn (``strata serve``): structured logs and a clean stop.

Logs go through :mod:`strata.logs` (``log.format``/``log.level``); uvicorn's access log is off because every
request already gets one line with its id from the API's telemetry middleware. On SIGTERM (or Ctrl-C) uvicorn
stops accepting connections, lets the requests in flight finish (up to ``server.shutdown_grace_s``), then runs
the app's shutdown, which closes the engine.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from core.settings import StrataSettings
from strata.logs import configure_logging
from strata.telemetry import PROMETHEUS_ENV, SHARED_METRICS_ENV


def served_app() -> Any:
    """The app of one server process, logging as configured (the factory each worker process calls)."""
    from strata.api import create_app

    settings = StrataSettings()
    configure_logging(settings.log, background=True)
    return create_app(settings)


def uvicorn_options(settings: StrataSettings, host: str, port: int) -> dict[str, Any]:
    server = settings.server
    return dict(host=host, port=port, log_level=settings.log.level.lower(), log_config=None, access_log=False,
                timeout_keep_alive=server.keep_alive_s, timeout_graceful_shutdown=server.shutdown_grace_s)


def run_server(settings: StrataSettings, host: str, port: int, workers: int = 1) -> None:
    """Serve until SIGTERM or SIGINT. With ``workers`` > 1 each process builds its own app from the environment
    (the caller puts the data directory there)."""
    import uvicorn

    configure_logging(settings.log, background=True)
    options = uvicorn_options(settings, host, port)
    if workers > 1:
        # The workers' request metrics go to files in a folder of this run, summed by whichever answers /metrics.
        with tempfile.TemporaryDirectory(prefix="strata-metrics-") as shared:
            os.environ[SHARED_METRICS_ENV] = os.environ[PROMETHEUS_ENV] = shared
            try:
                uvicorn.run("strata.serving:served_app", factory=True, workers=workers, **options)
            finally:
                os.environ.pop(SHARED_METRICS_ENV, None)
                os.environ.pop(PROMETHEUS_ENV, None)
    else:
        from strata.api import create_app

        uvicorn.run(create_app(settings), **options)
